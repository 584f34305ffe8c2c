// Configuration parsing (env objects through the real parser), the exit on a bad value, and the
// logger's redaction.
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/platform/config/index.js';
import { sendLimitsOf } from '../../src/composition/index.js';
import { DEFAULT_SEND_LIMITS } from '../../src/verification/send-limit-rules.js';
import { createLogger } from '../../src/platform/logger.js';

function problemsOf(env: Record<string, string>): { variable: string; message: string }[] {
  try {
    parseConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return [...(err as ConfigError).problems];
  }
  throw new Error(`expected ${JSON.stringify(env)} to be refused`);
}

describe('parseConfig', () => {
  it('has the documented defaults', () => {
    const config = parseConfig({});
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      dataDir: './.data',
      databaseUrl: undefined,
      temporalAddress: undefined,
      sandbox: true,
      trustedProxies: [],
      logLevel: 'info',
      adminTokenGenerated: true,
    });
  });

  it('generates a fresh random ADMIN_TOKEN when unset, keeps a given one', () => {
    const a = parseConfig({});
    const b = parseConfig({});
    expect(a.adminToken).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(a.adminToken).not.toBe(b.adminToken);
    const given = parseConfig({ ADMIN_TOKEN: 'a-long-enough-admin-token' });
    expect(given).toMatchObject({ adminToken: 'a-long-enough-admin-token', adminTokenGenerated: false });
  });

  it('reads every variable', () => {
    const config = parseConfig({
      PORT: '9090',
      HOST: '127.0.0.1',
      DATA_DIR: '/var/lib/paygate',
      DATABASE_URL: 'postgres://user:pw@db:5432/paygate',
      TEMPORAL_ADDRESS: 'temporal:7233',
      TEMPORAL_NAMESPACE: 'payments',
      TEMPORAL_TASK_QUEUE: 'pg-q',
      TRUSTED_PROXIES: '10.0.0.1, 172.16.0.0/12,::1',
      LOG_LEVEL: 'warn',
      PUBLIC_BASE_URL: 'https://pay.example.com',
      ADMIN_HOST: '10.0.0.5',
      ADMIN_PORT: '8081',
      TEMPORAL_TLS_CERT: '/etc/paygate/client.pem',
      TEMPORAL_TLS_KEY: '/etc/paygate/client.key',
      TEMPORAL_TLS_CA: '/etc/paygate/ca.pem',
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
      TEMPORAL_API_KEY: 'cloud-api-key',
      TEMPORAL_MAX_CACHED_WORKFLOWS: '200',
    });
    expect(config).toMatchObject({
      port: 9090,
      host: '127.0.0.1',
      dataDir: '/var/lib/paygate',
      databaseUrl: 'postgres://user:pw@db:5432/paygate',
      temporalAddress: 'temporal:7233',
      temporalNamespace: 'payments',
      taskQueue: 'pg-q',
      maxCachedWorkflows: 200,
      sandbox: false,
      trustedProxies: ['10.0.0.1', '172.16.0.0/12', '::1'],
      logLevel: 'warn',
      publicBaseUrl: 'https://pay.example.com',
      admin: { host: '10.0.0.5', port: 8081 },
      temporalTls: {
        certPath: '/etc/paygate/client.pem',
        keyPath: '/etc/paygate/client.key',
        caPath: '/etc/paygate/ca.pem',
        serverName: 'temporal.internal',
      },
      temporalApiKey: 'cloud-api-key',
    });
  });

  it('PAYGATE_SANDBOX defaults on only when both DATABASE_URL and TEMPORAL_ADDRESS are unset', () => {
    const url = { PUBLIC_BASE_URL: 'https://pay.example.com' };
    const db = { DATABASE_URL: 'postgres://u:p@db:5432/paygate' };
    const temporal = { TEMPORAL_ADDRESS: 'localhost:7233' };
    expect(parseConfig({})).toMatchObject({ sandbox: true, sandboxForced: false });
    // either one set: production unless said otherwise (the review's case: npm start with a production DATABASE_URL)
    expect(parseConfig({ ...db, ...url }).sandbox).toBe(false);
    expect(parseConfig({ ...temporal, ...url }).sandbox).toBe(false);
    expect(parseConfig({ ...db, ...temporal, ...url }).sandbox).toBe(false);
    // on purpose: allowed, and flagged for the start-up warning
    expect(parseConfig({ ...db, PAYGATE_SANDBOX: 'true' })).toMatchObject({ sandbox: true, sandboxForced: true });
    expect(parseConfig({ ...temporal, PAYGATE_SANDBOX: 'on' })).toMatchObject({ sandbox: true, sandboxForced: true });
    expect(parseConfig({ PAYGATE_SANDBOX: '1' })).toMatchObject({ sandbox: true, sandboxForced: false });
    expect(parseConfig({ PAYGATE_SANDBOX: 'false', ...url }).sandbox).toBe(false);
  });

  it('requires PUBLIC_BASE_URL when sandbox mode is off, naming the variable', () => {
    const productionEnvs: Record<string, string>[] = [
      { DATABASE_URL: 'postgres://u:p@db:5432/paygate' },
      { TEMPORAL_ADDRESS: 'temporal:7233' },
      { PAYGATE_SANDBOX: 'false' },
    ];
    for (const env of productionEnvs) {
      const problems = problemsOf(env);
      expect(problems.map((p) => p.variable)).toEqual(['PUBLIC_BASE_URL']);
      expect(problems[0]!.message).toMatch(/sandbox mode is off/);
    }
    expect(parseConfig({}).publicBaseUrl).toBeUndefined();
  });

  it('takes the Temporal client certificate and key together or not at all; an API key alone is enough', () => {
    expect(problemsOf({ TEMPORAL_TLS_CERT: '/c.pem' }).map((p) => p.variable)).toEqual(['TEMPORAL_TLS_KEY']);
    expect(problemsOf({ TEMPORAL_TLS_KEY: '/k.pem' }).map((p) => p.variable)).toEqual(['TEMPORAL_TLS_CERT']);
    expect(parseConfig({ TEMPORAL_TLS_CA: '/ca.pem' }).temporalTls).toEqual({ caPath: '/ca.pem' });
    expect(parseConfig({ TEMPORAL_API_KEY: 'k' })).toMatchObject({ temporalTls: undefined, temporalApiKey: 'k' });
    expect(parseConfig({})).toMatchObject({ temporalTls: undefined, temporalApiKey: undefined, admin: undefined });
  });

  it('serves the admin API on its own listener only when ADMIN_PORT is set, on loopback by default', () => {
    expect(parseConfig({ ADMIN_PORT: '9000' }).admin).toEqual({ host: '127.0.0.1', port: 9000 });
    expect(parseConfig({ ADMIN_HOST: '0.0.0.0' }).admin).toBeUndefined();
  });

  it('treats empty strings as unset', () => {
    expect(parseConfig({ PORT: '', DATABASE_URL: '  ', ADMIN_TOKEN: '' })).toMatchObject({
      port: 8080,
      databaseUrl: undefined,
      adminTokenGenerated: true,
    });
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['PORT', '80.5'],
    ['ADMIN_TOKEN', 'short'],
    ['DATABASE_URL', 'mysql://db/x'],
    ['DATABASE_URL', 'not a url'],
    ['TEMPORAL_ADDRESS', 'http://temporal:7233'],
    ['PAYGATE_SANDBOX', 'maybe'],
    ['TRUSTED_PROXIES', '10.0.0.1,not-an-ip'],
    ['LOG_LEVEL', 'loud'],
    ['PUBLIC_BASE_URL', 'pay.example.com'],
    ['ADMIN_PORT', 'admin'],
  ])('refuses %s=%s naming the variable', (variable, value) => {
    const problems = problemsOf({ [variable]: value });
    expect(problems.map((p) => p.variable)).toEqual([variable]);
    expect(problems[0]!.message.length).toBeGreaterThan(0);
  });

  it('reads the verification send caps as <count>/<window> lists (or none); unset is the area default', () => {
    expect(sendLimitsOf(parseConfig({}))).toEqual(DEFAULT_SEND_LIMITS);
    expect(DEFAULT_SEND_LIMITS).toEqual({
      perPhone: [
        { max: 6, windowMs: 600_000 },
        { max: 10, windowMs: 86_400_000 },
      ],
      perProject: [{ max: 1000, windowMs: 3_600_000 }],
    });
    const config = parseConfig({
      VERIFICATION_SEND_LIMITS_PER_PHONE: ' 3/90s, 8/1D ',
      VERIFICATION_SEND_LIMITS_PER_PROJECT: 'none',
    });
    expect(sendLimitsOf(config)).toEqual({
      perPhone: [
        { max: 3, windowMs: 90_000 },
        { max: 8, windowMs: 86_400_000 },
      ],
      perProject: [],
    });
    expect(sendLimitsOf(parseConfig({ VERIFICATION_SEND_LIMITS_PER_PROJECT: '50/1h' })).perPhone).toEqual(
      DEFAULT_SEND_LIMITS.perPhone,
    );
    for (const bad of ['5', '0/10m', '5/10', '5/0s', '5/8d', '5/10m,', 'x/1h', '5/10m;10/24h']) {
      const problems = problemsOf({ VERIFICATION_SEND_LIMITS_PER_PHONE: bad });
      expect(
        problems.map((p) => p.variable),
        bad,
      ).toEqual(['VERIFICATION_SEND_LIMITS_PER_PHONE']);
      expect(problems[0]!.message).toMatch(/<count>\/<duration>/);
    }
  });

  it('reports every bad variable at once', () => {
    const problems = problemsOf({ PORT: '-1', LOG_LEVEL: 'x', TRUSTED_PROXIES: 'y' });
    expect(problems.map((p) => p.variable).sort()).toEqual(['LOG_LEVEL', 'PORT', 'TRUSTED_PROXIES']);
  });
});

describe('readConfigOrExit', () => {
  it('stops the process with exit code 1 and a message naming the variable', async () => {
    const script =
      "import('./src/platform/config/index.ts').then((m) => { m.readConfigOrExit(); process.stdout.write('survived'); })";
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: { PATH: process.env.PATH, PORT: 'not-a-port' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    clearTimeout(killer);
    expect(code).toBe(1);
    expect(stdout).not.toContain('survived');
    expect(stderr).toContain('PORT');
    expect(stderr).toContain('invalid configuration');
  });
});

describe('logger redaction', () => {
  function capture() {
    let text = '';
    const destination = new Writable({
      write(chunk: Buffer, _e, cb) {
        text += chunk.toString();
        cb();
      },
    });
    return { logger: createLogger({ destination }), text: () => text };
  }

  it('censors card data, OTPs, identity fields, secrets and authorization headers at any depth we log', () => {
    const { logger, text } = capture();
    logger.info({
      card_no: '4111111111111111',
      body: { card_pw: '12', card_identity_no: '880101', otp: '123456', identity_no: '8801011' },
      req: { headers: { authorization: 'Basic c2VjcmV0OnNlY3JldA==', 'user-agent': 'curl' } },
      person: { ci: 'CI-VALUE-XYZ', di: 'DI-VALUE-XYZ', name: '홍길동', phone: '01012345678' },
      keys: { secret_key: 'sk-very-secret', private_key: 'pk-very-secret', access_token: 'at-very-secret' },
      deep: { card: { number: '4000000000000002', password2: '34', identityNo: '990101' } },
      order_id: 'order-1',
    });
    const line = text();
    for (const secret of [
      '4111111111111111',
      '880101',
      '123456',
      '8801011',
      'c2VjcmV0OnNlY3JldA==',
      'CI-VALUE-XYZ',
      'DI-VALUE-XYZ',
      '홍길동',
      '01012345678',
      'sk-very-secret',
      'pk-very-secret',
      'at-very-secret',
      '4000000000000002',
      '990101',
    ]) {
      expect(line).not.toContain(secret);
    }
    expect(line).toContain('[REDACTED]');
    expect(line).toContain('order-1');
    expect(line).toContain('curl');
  });
});
