// The sandbox cannot leak: its signing secret is never a constant (SANDBOX_SECRET, or generated once
// into DATA_DIR with mode 0600 and reused across restarts), and its internal routes (/_sandbox/*)
// answer only paygate's token. Proven on the in-process sandbox exactly as `npm start` builds it
// (startConfiguredGateways) and on the standalone process (src/sandbox/main.ts).
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/platform/config/index.js';
import { createLogger } from '../../src/platform/logger.js';
import { fetchSandboxSms } from '../../src/gateways/sandbox-inbox.js';
import { SANDBOX_SECRET_FILE } from '../../src/sandbox/secret.js';
import { startSandboxGateways } from '../../src/sandbox/server.js';
import { startConfiguredGateways, type ConfiguredGateways } from '../../src/composition/index.js';
import { testCard } from '../gateways/fixture.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const INTERNAL_ROUTES = [
  { method: 'GET', path: '/_sandbox/stats' },
  { method: 'GET', path: '/_sandbox/sms?phone=01012345678' },
  { method: 'GET', path: '/_sandbox/charges?idempotency_key=k' },
  { method: 'GET', path: '/_sandbox/charges/tid_1' },
  { method: 'POST', path: '/_sandbox/faults', body: { operation: 'charge', fault: '500' } },
  { method: 'DELETE', path: '/_sandbox/faults' },
] as const;

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'paygate-sandbox-'));
  dirs.push(dir);
  return dir;
}
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

const silent = createLogger({ level: 'silent' });

async function inProcess(env: Record<string, string>): Promise<ConfiguredGateways> {
  return startConfiguredGateways(parseConfig({ PAYGATE_SANDBOX: 'true', ...env }), silent);
}

async function call(url: string, route: (typeof INTERNAL_ROUTES)[number], authorization?: string): Promise<number> {
  const res = await fetch(new URL(route.path, url), {
    method: route.method,
    headers: {
      ...(authorization === undefined ? {} : { authorization }),
      ...('body' in route ? { 'content-type': 'application/json' } : {}),
    },
    ...('body' in route ? { body: JSON.stringify(route.body) } : {}),
    signal: AbortSignal.timeout(5_000),
  });
  await res.arrayBuffer();
  return res.status;
}

async function issueKey(gateways: ConfiguredGateways): Promise<string> {
  const card = gateways.gateways.get('sandbox_card')!.card!;
  const issued = await card.issueBillingKey({
    idempotencyKey: `k-${Math.random()}`,
    card: testCard(),
    orderName: 'n',
    subscriptionId: 's',
  });
  return issued.gatewayBillingKey;
}

async function chargeWith(gateways: ConfiguredGateways, gatewayBillingKey: string) {
  return gateways.gateways
    .get('sandbox_card')!
    .card!.charge({
      idempotencyKey: `c-${Math.random()}`,
      gatewayBillingKey,
      amount: 1000,
      taxFree: 0,
      orderId: 'o',
      orderName: 'n',
      quota: 0,
    })
    .then(
      () => 'approved',
      (err: { pgErrorCode?: string }) => err.pgErrorCode ?? 'error',
    );
}

describe('signing secret', () => {
  it('is generated once into DATA_DIR (mode 0600) and reused by the next start: its billing keys still work', async () => {
    const dataDir = await tempDir();
    const first = await inProcess({ DATA_DIR: dataDir });
    const key = await issueKey(first);
    await first.close();
    const file = path.join(dataDir, SANDBOX_SECRET_FILE);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const secret = (await readFile(file, 'utf8')).trim();
    expect(secret.length).toBeGreaterThanOrEqual(32);

    const restarted = await inProcess({ DATA_DIR: dataDir });
    const elsewhere = await inProcess({ DATA_DIR: await tempDir() });
    try {
      expect(await chargeWith(restarted, key)).toBe('approved');
      // another installation has another secret: the key is not a valid signature there (no public default)
      expect(await chargeWith(elsewhere, key)).toBe('C201');
      expect((await readFile(path.join(dataDir, SANDBOX_SECRET_FILE), 'utf8')).trim()).toBe(secret);
    } finally {
      await restarted.close();
      await elsewhere.close();
    }
  });

  it('SANDBOX_SECRET wins over DATA_DIR: two installations sharing it accept each other’s keys', async () => {
    const secret = 'shared-sandbox-secret-0123456789';
    const a = await inProcess({ DATA_DIR: await tempDir(), SANDBOX_SECRET: secret });
    const b = await inProcess({ DATA_DIR: await tempDir(), SANDBOX_SECRET: secret });
    try {
      expect(await chargeWith(b, await issueKey(a))).toBe('approved');
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a sandbox started without a secret signs with a random one, not a shared default', async () => {
    const a = await startSandboxGateways({ token: 'a-token-0123456789abcdef' });
    const b = await startSandboxGateways({ token: 'b-token-0123456789abcdef' });
    try {
      const res = await fetch(new URL('/card/v1/billing-keys', a.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          card_no: '4111111111111111',
          card_pw2: '12',
          buyer_auth_no: '900101',
          exp_yy: '39',
          exp_mm: '12',
          goods_name: 'n',
          customer_ref: 'c',
        }),
      });
      const { data } = (await res.json()) as { data: { bkey: string } };
      const charged = await fetch(new URL('/card/v1/charges', b.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'x' },
        body: JSON.stringify({ bkey: data.bkey, amount: 100, tax_free: 0, order_id: 'o', goods_name: 'n', installment: 0 }),
      });
      expect(((await charged.json()) as { res_cd: string }).res_cd).toBe('C201');
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('configuration', () => {
  it('SANDBOX_SECRET and SANDBOX_TOKEN shorter than 16 characters stop the process, naming the variable', () => {
    for (const variable of ['SANDBOX_SECRET', 'SANDBOX_TOKEN']) {
      expect(() => parseConfig({ [variable]: 'short' })).toThrow(ConfigError);
      expect(() => parseConfig({ [variable]: 'short' })).toThrow(variable);
    }
    const config = parseConfig({ SANDBOX_SECRET: 'a-secret-of-16-chars', SANDBOX_TOKEN: 'a-token-of-16-chars!' });
    expect(config.sandboxSecret).toBe('a-secret-of-16-chars');
    expect(config.sandboxToken).toBe('a-token-of-16-chars!');
    expect(parseConfig({}).sandboxToken).toBeUndefined();
  });
});

describe('internal routes', () => {
  it('in-process: refused (401) without the token or with a wrong one; the token differs per process unless SANDBOX_TOKEN is set', async () => {
    const dataDir = await tempDir();
    const a = await inProcess({ DATA_DIR: dataDir });
    const b = await inProcess({ DATA_DIR: dataDir });
    const fixed = await inProcess({ DATA_DIR: dataDir, SANDBOX_TOKEN: 'fixed-sandbox-token-0123456789' });
    try {
      expect(a.sandboxToken).toEqual(expect.any(String));
      expect(a.sandboxToken).not.toBe(b.sandboxToken);
      expect(fixed.sandboxToken).toBe('fixed-sandbox-token-0123456789');
      for (const route of INTERNAL_ROUTES) {
        expect(await call(a.sandboxUrl!, route), route.path).toBe(401);
        expect(await call(a.sandboxUrl!, route, `Bearer ${b.sandboxToken}`), route.path).toBe(401);
        expect(await call(a.sandboxUrl!, route, `Basic ${a.sandboxToken}`), route.path).toBe(401);
        expect([200, 404], route.path).toContain(await call(a.sandboxUrl!, route, `Bearer ${a.sandboxToken}`));
        expect([200, 404], route.path).toContain(await call(fixed.sandboxUrl!, route, 'Bearer fixed-sandbox-token-0123456789'));
      }
      // encoded or doubled spellings of the path do not reach a route without the token either
      for (const p of ['/%5Fsandbox/stats', '/_sandbox//stats', '/_SANDBOX/stats', '/_sandbox/stats/']) {
        expect([401, 404], p).toContain(await call(a.sandboxUrl!, { method: 'GET', path: p } as never));
      }
      // the PGs themselves still answer paygate's adapters
      expect(await issueKey(a)).toMatch(/^sbk_/);
    } finally {
      await a.close();
      await b.close();
      await fixed.close();
    }
  });
});

describe('split deployment (SANDBOX_GATEWAY_URL)', () => {
  it("the API's readiness probe follows the sandbox's GET /health: ready while it answers, not once it is gone", async () => {
    const standalone = await startSandboxGateways({ token: 'split-sandbox-token-0123456789' });
    const health = await fetch(new URL('/health', standalone.url));
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const split = await startConfiguredGateways(
      parseConfig({ PAYGATE_SANDBOX: 'true', SANDBOX_GATEWAY_URL: standalone.url }),
      silent,
    );
    const inProcessOnly = await inProcess({ DATA_DIR: await tempDir() });
    try {
      expect(await split.sandboxReady!()).toBe(true);
      await standalone.close();
      expect(await split.sandboxReady!()).toBe(false);
      // the in-process sandbox lives and dies with the process: no probe of its own
      expect(inProcessOnly.sandboxReady).toBeUndefined();
    } finally {
      await split.close();
      await inProcessOnly.close();
      await standalone.close();
    }
  });

  it('paygate sends SANDBOX_TOKEN to a sandbox of its own; without it the start-up log warns and the inbox is refused', async () => {
    const token = 'split-sandbox-token-0123456789';
    const standalone = await startSandboxGateways({ token });
    const lines: string[] = [];
    const logger = createLogger({
      level: 'info',
      destination: new Writable({
        write(chunk: Buffer, _enc, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    });
    const withToken = await startConfiguredGateways(
      parseConfig({ PAYGATE_SANDBOX: 'true', SANDBOX_GATEWAY_URL: standalone.url, SANDBOX_TOKEN: token }),
      logger,
    );
    const without = await startConfiguredGateways(
      parseConfig({ PAYGATE_SANDBOX: 'true', SANDBOX_GATEWAY_URL: standalone.url }),
      logger,
    );
    try {
      expect(withToken.sandboxToken).toBe(token);
      expect(await fetchSandboxSms({ url: withToken.sandboxUrl!, token: withToken.sandboxToken! }, '01012345678')).toEqual([]);
      expect(without.sandboxToken).toBeUndefined();
      expect(lines.join('')).toContain('SANDBOX_TOKEN is not set');
      await expect(fetchSandboxSms({ url: without.sandboxUrl!, token: '' }, '01012345678')).rejects.toThrow(/HTTP 401/);
    } finally {
      await withToken.close();
      await without.close();
      await standalone.close();
    }
  });
});

/** Runs the standalone sandbox (src/sandbox/main.ts) until it logs its address; SIGKILL on timeout and at the end. */
async function standalone(env: Record<string, string>): Promise<{ url: string; kill(): void; output(): string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/sandbox/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', SANDBOX_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => {
    output += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    output += c.toString();
  });
  const kill = () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    const line = output.split('\n').find((l) => l.includes('sandbox gateways listening'));
    if (line) return { url: (JSON.parse(line) as { url: string }).url, kill, output: () => output };
    if (child.exitCode !== null || Date.now() > deadline) {
      kill();
      throw new Error(`standalone sandbox did not start: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('standalone sandbox process', () => {
  it('binds loopback by default and, without SANDBOX_TOKEN, refuses every internal route', async () => {
    const dataDir = await tempDir();
    const proc = await standalone({ DATA_DIR: dataDir });
    try {
      expect(new URL(proc.url).hostname).toBe('127.0.0.1');
      // bound to 127.0.0.1 only: another address of this host (even another loopback one) is not served
      await expect(fetch(`http://127.0.0.2:${new URL(proc.url).port}/card/v1/billing-keys`)).rejects.toThrow();
      expect(proc.output()).toContain('SANDBOX_TOKEN is not set');
      for (const route of INTERNAL_ROUTES) expect(await call(proc.url, route), route.path).toBe(401);
      // its health answers without the token (docker-compose's healthcheck asks it)
      expect(await call(proc.url, { method: 'GET', path: '/health' } as never)).toBe(200);
      expect((await stat(path.join(dataDir, SANDBOX_SECRET_FILE))).mode & 0o777).toBe(0o600);
    } finally {
      proc.kill();
    }
  });

  it('with SANDBOX_TOKEN the internal routes answer that token only; SANDBOX_HOST chooses the interface', async () => {
    const proc = await standalone({
      DATA_DIR: await tempDir(),
      SANDBOX_TOKEN: 'standalone-token-0123456789',
      SANDBOX_HOST: '127.0.0.2',
    });
    try {
      const local = `http://127.0.0.2:${new URL(proc.url).port}`;
      expect(proc.url).toBe(local);
      await expect(fetch(`http://127.0.0.1:${new URL(proc.url).port}/_sandbox/stats`)).rejects.toThrow();
      expect(await call(local, INTERNAL_ROUTES[0])).toBe(401);
      expect(await call(local, INTERNAL_ROUTES[0], 'Bearer standalone-token-0123456789')).toBe(200);
    } finally {
      proc.kill();
    }
  });
});
