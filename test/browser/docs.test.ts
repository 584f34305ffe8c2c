// The API reference (/docs) in real Chromium, served by the real app over HTTP: a line saying what is coming while
// Scalar's bundle loads, gone once it has run; the page renders under its Content-Security-Policy with no violation
// reported, no request leaving this server and no 'Ask AI' control (Scalar's cloud agent), and a page of another
// origin that frames it gets nothing (frame-ancestors 'none', X-Frame-Options DENY). Screenshots go to
// test-results/docs/.
//
// Chromium is Debian's (/usr/bin/chromium; `.ci/run` installs it when missing). Without it the test is skipped
// outside CI and fails in CI.
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(resolve(import.meta.dirname, '../..'), 'test-results', 'docs');

const available = existsSync(CHROMIUM);
if (!available && process.env.CI) throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install chromium)`);

describe.skipIf(!available)('/docs in Chromium', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser | undefined;
  let framer: Server;
  let framerUrl: string;

  beforeAll(async () => {
    t = await buildTestApp();
    base = await t.app.listen({ host: '127.0.0.1', port: 0 });
    // another origin (another port) whose page frames /docs
    framer = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(`<!doctype html><title>framer</title><iframe id="f" src="${base}/docs/" width="800" height="600"></iframe>`);
    });
    await new Promise<void>((done) => framer.listen(0, '127.0.0.1', done));
    framerUrl = `http://127.0.0.1:${(framer.address() as AddressInfo).port}/`;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    mkdirSync(SHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((done) => framer?.close(done));
    await t?.close();
  });

  it('renders the reference with no CSP violation and nothing loaded from elsewhere', async () => {
    const page = await browser!.newPage();
    const violations: string[] = [];
    const errors: string[] = [];
    const foreign: string[] = [];
    const failed: string[] = [];
    await page.exposeFunction('reportViolation', (v: string) => violations.push(v));
    await page.addInitScript(
      "document.addEventListener('securitypolicyviolation', (e) => window.reportViolation([e.violatedDirective, e.blockedURI, e.sample].join(' ')));",
    );
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`${m.text()} ${m.location().url}`);
    });
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('response', (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
    });
    page.on('request', (r) => {
      const url = r.url();
      if (!url.startsWith(base) && !url.startsWith('data:')) foreign.push(url);
    });

    const res = await page.goto(`${base}/docs/`, { waitUntil: 'networkidle' });
    expect(res?.status()).toBe(200);
    const headers = res!.headers();
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers['x-frame-options']).toBe('DENY');
    // Scalar rendered the document: the title and an operation of it
    await page.getByText('Charge a billing key').first().waitFor({ timeout: 30_000 });
    await expect(page.title()).resolves.toBe('paygate API reference');
    await page.screenshot({ path: join(SHOTS, 'docs.png') });

    // The one report is the bundled zod's probe for code generation (`try { Function('') } catch {}`): refused, as
    // it should be, and zod runs without it. Anything else (a script, a style, a font, a fetch) is a failure.
    expect(violations.filter((v) => v !== 'script-src eval ')).toEqual([]);
    expect(failed).toEqual([]);
    // the favicon included: it is served (/favicon.ico), so nothing failed at all
    expect(errors).toEqual([]);
    // Scalar's cloud "Ask AI" agent, which it turns on by itself on localhost, is off: no control of it on the page
    await expect(page.getByText(/Ask AI/i).count()).resolves.toBe(0);
    await expect(page.locator('.agent-button-container').count()).resolves.toBe(0);
    expect(foreign).toEqual([]);
    await page.close();
  });

  it('shows what is coming while the reference loads, and nothing of it once loaded', async () => {
    const page = await browser!.newPage();
    // Scalar's bundle held back, as on a slow link: the page must not be blank meanwhile
    let releaseScript!: () => void;
    const held = new Promise<void>((release) => {
      releaseScript = release;
    });
    await page.route('**/docs/js/scalar.js', async (route) => {
      await held;
      await route.continue();
    });
    await page.goto(`${base}/docs/`, { waitUntil: 'commit' });
    const loading = page.getByRole('status');
    await loading.waitFor({ state: 'visible', timeout: 10_000 });
    await expect(loading.textContent()).resolves.toContain('Loading the paygate API reference');
    await expect(page.getByRole('link', { name: 'openapi.json' }).getAttribute('href')).resolves.toBe('/docs/openapi.json');
    await page.screenshot({ path: join(SHOTS, 'docs-loading.png') });
    releaseScript();
    await page.getByText('Charge a billing key').first().waitFor({ timeout: 30_000 });
    await expect(page.getByText('Loading the paygate API reference').count()).resolves.toBe(0);
    await page.close();
  });

  it('cannot be framed by another page', async () => {
    const page = await browser!.newPage();
    const messages: string[] = [];
    page.on('console', (m) => messages.push(m.text()));
    await page.goto(framerUrl, { waitUntil: 'networkidle' });
    await page.waitForTimeout(1_000);
    await page.screenshot({ path: join(SHOTS, 'framed.png') });
    const frame = page.frames().find((f) => f !== page.mainFrame());
    expect(frame).toBeDefined();
    // the blocked frame holds Chromium's error page, never the reference
    const framedText = await frame!.evaluate('document.body ? document.body.innerText : ""').catch(() => '');
    expect(framedText).not.toContain('paygate');
    expect(frame!.url()).not.toBe(`${base}/docs/`);
    await page.close();
  });
});
