// The sandbox dashboard end to end in real Chromium: the stack started as `npm start` starts it (src/main.ts with
// a fresh DATA_DIR, free ports, sandbox mode, the embedded engine), a project made through the admin API, then in the
// browser: sign in, issue a verification, read the OTP from the inbox, confirm it, pay with escrow, start shipping,
// confirm the purchase as the buyer, configure the messaging webhook and see its delivery arrive, see the sandbox
// clock (a key's session cannot move it), then as the admin advance it and see a schedule's charge and the
// project's notifications, and rotate the webhook secret and see it once; last, every page with its rows fits 1400
// px and 390 px without sideways scrolling. A screenshot of each page goes to test-results/dashboard/.
//
// Chromium is Debian's (/usr/bin/chromium; `.ci/run` installs it when missing). Without it the test is skipped
// outside CI and fails in CI. The server's process group is killed with SIGKILL at the end or on any timeout.
import { freePort } from '../../tools/child-processes.js';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { measureOverflow } from '../helpers/page-overflow.js';

const CHROMIUM = '/usr/bin/chromium';
const ROOT = resolve(import.meta.dirname, '../..');
const SHOTS = join(ROOT, 'test-results', 'dashboard');
const ADMIN_TOKEN = 'browser-test-admin-token-0123456789';
/** `npm start` on a loaded 2-core machine takes a while: bundling the workflows, starting the engine */
const START_TIMEOUT_MS = 240_000;

const available = existsSync(CHROMIUM);
if (!available && process.env.CI) throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install chromium)`);

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

describe.skipIf(!available)('the sandbox dashboard in Chromium', () => {
  let server: ChildProcess | undefined;
  let serverLog = '';
  let dataDir: string;
  let base: string;
  let browser: Browser | undefined;
  let page: Page;
  let receiver: Server;
  let receiverUrl: string;
  const received: { id: string | undefined; body: string }[] = [];
  let keys: { client_key: string; secret_key: string };
  let basic: string;

  function killServer(): void {
    if (server?.pid !== undefined && server.exitCode === null) {
      try {
        process.kill(-server.pid, 'SIGKILL'); // the whole group: tsx, main.ts and the engine it spawned
      } catch {
        server.kill('SIGKILL');
      }
    }
  }

  async function api(method: string, path: string, body?: unknown, auth = basic): Promise<Record<string, unknown>> {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(90_000),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${JSON.stringify(json)}`);
    return json;
  }

  async function shot(name: string): Promise<void> {
    await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  }

  /** Submits the form holding `button` and waits for the page htmx swaps in (boosted forms keep the page). */
  async function submit(buttonText: string | RegExp, scope = page.locator('main')): Promise<void> {
    const settled = page.waitForResponse((r) => r.request().method() === 'POST', { timeout: 90_000 });
    await scope.getByRole('button', { name: buttonText }).first().click();
    await settled;
    await page.waitForLoadState('domcontentloaded');
  }

  /** Reloads `path` until `check` holds (work that a workflow finishes after the answer). */
  async function until(path: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await page.goto(`${base}${path}`);
      if (await check()) return;
      if (Date.now() > deadline) throw new Error(`${path}: the expected state did not appear`);
      await sleep(1000);
    }
  }

  beforeAll(async () => {
    rmSync(SHOTS, { recursive: true, force: true });
    mkdirSync(SHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'paygate-dashboard-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;

    receiver = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      req.on('end', () => {
        received.push({ id: req.headers['webhook-id'] as string | undefined, body });
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/paygate`;

    // as `npm start` runs it (tsx src/main.ts), without the variables that would leave sandbox mode or point it at
    // another database: this file runs on PGlite only
    const stripped = ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'PAYGATE_SANDBOX', 'ADMIN_PORT', 'PUBLIC_BASE_URL'];
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !stripped.includes(name)));
    server = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: { ...env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const keep = (chunk: Buffer) => {
      serverLog = (serverLog + chunk.toString()).slice(-400_000);
    };
    server.stdout?.on('data', keep);
    server.stderr?.on('data', keep);

    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (server.exitCode !== null) throw new Error(`the server exited (${server.exitCode}):\n${serverLog}`);
      const ok = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2000) })
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) break;
      if (Date.now() > deadline) {
        killServer();
        throw new Error(`the server did not answer /health in ${START_TIMEOUT_MS / 1000} s:\n${serverLog}`);
      }
      await sleep(1000);
    }

    const created = await api('POST', '/admin/v1/projects', { name: 'Browser shop' }, `Bearer ${ADMIN_TOKEN}`);
    keys = { client_key: String(created.client_key), secret_key: String(created.secret_key) };
    // the project's own notifications (escrow status changes, subscription events) go to the receiver too
    await api('PATCH', `/admin/v1/projects/${created.application_id}`, { webhook_url: receiverUrl }, `Bearer ${ADMIN_TOKEN}`);
    basic = `Basic ${Buffer.from(`${keys.client_key}:${keys.secret_key}`).toString('base64')}`;

    // a billing key and a monthly schedule whose first charge falls one hour ahead on the sandbox clock
    const key = await api('POST', '/v2/request/subscribe', {
      pg: 'sandbox_card',
      method: '카드자동(REST)',
      subscription_id: 'browser-sub-1',
      order_name: '월 구독',
      card_no: '4111111111111111',
      card_pw: '12',
      card_identity_no: '900101',
      card_expire_year: '39',
      card_expire_month: '12',
    });
    const clock = await api('GET', '/sandbox/v1/clock');
    const startAt = new Date(new Date(String(clock.now)).getTime() + 3600_000).toISOString();
    await api('POST', '/v2/subscribe/schedules', {
      billing_key: key.billing_key,
      order_name: 'Pro plan',
      price: 9900,
      interval: 'month',
      start_at: startAt,
      max_charges: 12,
    });

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
      timeout: 60_000,
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    page.setDefaultTimeout(60_000);
  }, START_TIMEOUT_MS + 120_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    killServer();
    await new Promise<void>((done) => (receiver ? receiver.close(() => done()) : done()));
    rmSync(dataDir, { recursive: true, force: true });
  }, 30_000);

  it('signs in, verifies, ships and confirms, sees a webhook delivery and a schedule charge', async () => {
    try {
      await walk();
    } catch (err) {
      // what the browser showed and what the server said, next to the screenshots
      await page.screenshot({ path: join(SHOTS, 'failure.png'), fullPage: true }).catch(() => undefined);
      writeFileSync(join(SHOTS, 'server.log'), serverLog);
      throw err;
    }
  }, 240_000);

  async function walk(): Promise<void> {
    const consoleErrors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });

    // sign in with the project's keys
    await page.goto(`${base}/dashboard`);
    await expect.poll(() => page.url()).toContain('/dashboard/login');
    await shot('01-login');
    await page.getByLabel('Client key').fill(keys.client_key);
    await page.getByLabel('Secret key').fill(keys.secret_key);
    await submit('Sign in');
    await page.getByRole('heading', { name: 'Receipts' }).waitFor();
    expect(await page.locator('.project').textContent()).toBe('Browser shop');

    // a verification: the OTP read from the inbox on its page, then confirmed
    await page.getByRole('link', { name: 'Verifications' }).click();
    await page.getByRole('heading', { name: 'Verifications' }).waitFor();
    await shot('02-verifications');
    await submit('Send the OTP');
    await page.locator('#inbox code.otp').first().waitFor();
    await shot('03-verification-inbox');
    const otp = (await page.locator('#inbox code.otp').first().textContent())?.trim() ?? '';
    expect(otp).toMatch(/^\d{6}$/);
    expect(await page.locator('#inbox').textContent()).toContain(otp); // the message text as the inbox shows it
    await page.getByLabel('OTP').fill(otp);
    await submit('Confirm');
    await expect.poll(() => page.locator('h1 .badge').textContent()).toContain('verified (12)');
    await shot('04-verification-confirmed');

    // escrow: pay, start shipping, the buyer confirms the purchase
    await page.getByRole('link', { name: 'Escrow' }).click();
    await page.getByRole('heading', { name: 'Escrow orders' }).waitFor();
    await submit('Pay with escrow');
    await expect.poll(() => page.locator('#escrow-status').textContent()).toContain('(0)');
    await shot('05-escrow-paid');
    await submit('Start shipping');
    await expect.poll(() => page.locator('#escrow-status').textContent()).toContain('(3)');
    const orderPath = new URL(page.url()).pathname;
    await submit('purchase confirmed');
    await until(orderPath, async () => ((await page.locator('#escrow-status').textContent()) ?? '').includes('(1)'));
    const history = (await page.locator('table').last().textContent()) ?? '';
    expect(history).toContain('shipping_start');
    expect(history).toContain('purchase_confirmed');
    await shot('06-escrow-confirmed');

    // the messaging webhook: configured here, a test event sent, its delivery seen done with its attempt
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('URL').fill(receiverUrl);
    await submit('Save');
    await page.getByText('The webhook configuration was saved.').waitFor();
    await submit('Send a test event');
    await until('/dashboard/webhooks', async () => (await page.locator('.badge.d-done').count()) > 0);
    await page.locator('table.deliveries details summary').first().click();
    expect(await page.locator('table.attempts').first().textContent()).toContain('200');
    await shot('07-webhooks');
    expect(received.length).toBeGreaterThan(0);
    expect(received[0]?.id).toMatch(/.+/);

    // the schedule: nothing charged yet; the clock is one for every project, so a key's session only reads it
    await page.getByRole('link', { name: 'Schedules' }).click();
    await page.locator('main table a').first().click();
    await page.getByRole('heading', { name: /Schedule/ }).waitFor();
    expect(await page.locator('.badge.c-paid').count()).toBe(0);
    const schedulePath = new URL(page.url()).pathname;
    await page.goto(`${base}/dashboard/clock`);
    await page.locator('#clock-admin-only').waitFor();
    expect(await page.getByRole('button', { name: '+ 1 day' }).count()).toBe(0);
    await shot('08-clock');

    // the lists that have no action in this walk, for the screenshots
    for (const [name, path] of [
      ['10-receipts', '/dashboard/receipts'],
      ['11-billing-keys', '/dashboard/billing-keys'],
      ['12-reserves', '/dashboard/reserves'],
      ['13-escrow-list', '/dashboard/escrow'],
    ] as const) {
      await page.goto(`${base}${path}`);
      await shot(name);
    }
    expect(await page.locator('main').textContent()).toContain('구매확정');

    // signed out, the pages send to the sign-in; the admin token signs in and picks the project
    await submit('Sign out', page.locator('header'));
    await page.goto(`${base}/dashboard/receipts`);
    await expect.poll(() => page.url()).toContain('/dashboard/login');
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await submit('Sign in as admin');
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    await shot('14-admin-projects');
    await submit('Open');
    await page.getByRole('heading', { name: 'Receipts' }).waitFor();
    expect(await page.locator('.project').textContent()).toBe('Browser shop');

    // the admin moves the sandbox clock a day: the schedule charges its first period
    await page.goto(`${base}/dashboard/clock`);
    const before = await page.locator('#clock-now').textContent();
    await shot('08b-clock-admin');
    await submit('+ 1 day');
    await page.getByText(/The sandbox clock moved forward/).waitFor();
    expect(await page.locator('#clock-now').textContent()).not.toBe(before);
    await until(schedulePath, async () => (await page.locator('.badge.c-paid').count()) > 0);
    await shot('09-schedule-charged');

    // the project's notifications: the escrow transitions' and the schedule charge's deliveries, done
    await until('/dashboard/notifications', async () => {
      const text = (await page.locator('table.deliveries').textContent()) ?? '';
      return (
        text.includes('escrow.status_changed') && /subscription/i.test(text) && (await page.locator('.badge.d-done').count()) >= 3
      );
    });
    await shot('15-notifications');
    // an event reads as its name, its code marked as an event's (never "401 subscription.charged", an HTTP status's look)
    const events = (await page.locator('table.deliveries > tbody > tr > td:nth-child(2)').allTextContents()).map((t) =>
      t.replace(/\s+/g, ' ').trim(),
    );
    expect(events).toContain('subscription.charged event 401');
    expect(
      events.every((e) => /^[a-z_.]+ event \d{3}$/.test(e)),
      events.join(' | '),
    ).toBe(true);

    // the admin rotates the messaging webhook secret: shown once, on the page right after, and not on a second look
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: /Webhooks/ }).waitFor();
    await submit('Rotate the secret');
    await page.locator('#revealed-secret').waitFor();
    expect(await page.locator('#revealed-secret').textContent()).toContain('Shown once: copy it now');
    expect(await page.locator('#revealed-secret code').textContent()).toMatch(/^whsec_/);
    await shot('16-webhook-secret-shown');
    await page.goto(`${base}/dashboard/webhooks/secret`);
    await page.locator('#secret-gone').waitFor();
    expect(await page.locator('#revealed-secret').count()).toBe(0);
    await shot('17-webhook-secret-gone');

    // every page, now that its tables hold rows, fits a desktop and a phone: no sideways scroll, nothing sticking out
    // of main but inside a scrolling table
    const filled = [
      'receipts',
      'billing-keys',
      'verifications',
      'escrow',
      orderPath.replace('/dashboard/', ''),
      'reserves',
      'schedules',
      schedulePath.replace('/dashboard/', ''),
      'webhooks',
      'notifications',
      'clock',
    ];
    for (const width of [1400, 390]) {
      await page.setViewportSize({ width, height: 900 });
      for (const path of filled) {
        await page.goto(`${base}/dashboard/${path}`);
        await page.screenshot({ path: join(SHOTS, `w${width}-${path.replaceAll('/', '-')}.png`), fullPage: true });
        const found = await measureOverflow(page);
        expect(found.wide, `${path} at ${width} px`).toEqual([]);
        expect(found.scrollWidth, `${path} at ${width} px`).toBeLessThanOrEqual(found.width);
        // every table whole at both widths: a desktop shows its columns, a phone its rows as stacked cards
        expect(found.clipped, `${path}: tables cut at ${width} px`).toEqual([]);
      }
    }

    // no CSP violation, no script error on any page
    expect(consoleErrors).toEqual([]);
  }
});
