// The dashboard's pages with tables at a desktop (1400 px) and a phone (390 px) width in real Chromium, served by
// the real app over HTTP: the page never scrolls sideways, and nothing in main is wider than the viewport unless it
// sits inside a scroll container (.table-scroll). Screenshots go to test-results/dashboard-layout/.
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { measureOverflow } from '../helpers/page-overflow.js';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(resolve(import.meta.dirname, '../..'), 'test-results', 'dashboard-layout');
const available = existsSync(CHROMIUM);
if (!available && process.env.CI) throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install chromium)`);

describe.skipIf(!available)('dashboard layout in Chromium', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser | undefined;
  let p: TestProject;

  beforeAll(async () => {
    t = await buildTestApp();
    p = await t.createProject();
    base = await t.app.listen({ host: '127.0.0.1', port: 0 });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    mkdirSync(SHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  for (const width of [1400, 390]) {
    it(`has no horizontal overflow at ${width} px`, async () => {
      const page = await browser!.newPage({ viewport: { width, height: 900 } });
      await page.goto(`${base}/dashboard/login`);
      await page.fill('input[name=client_key]', p.clientKey);
      await page.fill('input[name=secret_key]', p.secretKey);
      await Promise.all([
        page.waitForURL(/\/dashboard\/receipts/),
        page.getByRole('button', { name: 'Sign in', exact: true }).click(),
      ]);
      for (const path of ['receipts', 'verifications', 'webhooks']) {
        await page.goto(`${base}/dashboard/${path}`);
        await page.screenshot({ path: join(SHOTS, `${path}-${width}.png`), fullPage: true });
        const found = await measureOverflow(page);
        expect(found.wide, `${path} at ${width} px`).toEqual([]);
        expect(found.scrollWidth, `${path} at ${width} px`).toBeLessThanOrEqual(found.width);
      }
      await page.close();
    });
  }
});
