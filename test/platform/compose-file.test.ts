// docker-compose.yml as docs/production.md describes it: `docker compose up` is production-shaped (no sandbox, and
// nothing that starts without the profile needs it), `--profile sandbox` adds the sandbox with a volume for its
// state, and every service has a healthcheck. paygate's own checks are node one-liners (the slim image has no curl):
// each is run here against the real server it asks (the standalone sandbox, the worker's metrics listener) and
// against an API /health answering 200 and 503, and must exit 0 only on a 2xx.
//
// The YAML parser is the one @fastify/swagger serves /openapi.yaml with, so it is installed wherever paygate is.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startMetricsListener } from '../../src/platform/observability/metrics-listener.js';
import { createMetrics } from '../../src/platform/observability/metrics.js';
import { startSandboxGateways } from '../../src/sandbox/server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Service {
  readonly profiles?: readonly string[];
  readonly build?: unknown;
  readonly image?: string;
  readonly environment?: Readonly<Record<string, string | number | boolean>>;
  readonly volumes?: readonly string[];
  readonly depends_on?: Readonly<Record<string, { readonly condition?: string; readonly required?: boolean }>>;
  readonly healthcheck?: { readonly test?: readonly string[] };
}

const compose = parse(readFileSync(`${ROOT}docker-compose.yml`, 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};
const { services } = compose;
/** WORKDIR of the Dockerfile: DATA_DIR (./.data by default) is under it */
const workdir = /^WORKDIR\s+(\S+)/m.exec(readFileSync(`${ROOT}Dockerfile`, 'utf8'))![1]!;

/** The one-liner of a service built from paygate's image: `["CMD", "node", "-e", code]`. */
function nodeCheck(name: string): string {
  const test = services[name]!.healthcheck!.test!;
  expect(test.slice(0, 3), name).toEqual(['CMD', 'node', '-e']);
  return test[3]!;
}

/** Runs a one-liner with its URL's port moved to `port`; its exit code (SIGKILL after 10 s). */
function runCheck(code: string, port: number, env: Record<string, string> = {}): Promise<number> {
  const moved = code.replace(/http:\/\/127\.0\.0\.1:\d+\//, `http://127.0.0.1:${port}/`);
  expect(moved).not.toBe(code);
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['-e', moved],
      { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 10_000, killSignal: 'SIGKILL' },
      (err) => done(err ? ((err as { code?: number }).code ?? -1) : 0),
    );
  });
}

/** The port in a one-liner's URL. */
const portOf = (code: string) => Number(/http:\/\/127\.0\.0\.1:(\d+)\//.exec(code)![1]);

describe('docker-compose.yml', () => {
  it('puts the sandbox behind a profile, with a named volume at its DATA_DIR', () => {
    const sandbox = services.sandbox!;
    expect(sandbox.profiles).toEqual(['sandbox']);
    expect(sandbox.environment?.DATA_DIR).toBeUndefined();
    const mount = sandbox.volumes?.find((v) => v.endsWith(`:${workdir}/.data`));
    expect(mount, 'a volume at the default DATA_DIR').toBeDefined();
    const volume = mount!.split(':')[0]!;
    expect(volume).toMatch(/^[a-z][\w-]*$/);
    expect(Object.keys(compose.volumes ?? {})).toContain(volume);
  });

  it('starts nothing without the profile that needs a service of a profile', () => {
    const profiled = new Set(Object.keys(services).filter((name) => services[name]!.profiles?.length));
    expect([...profiled]).toEqual(['sandbox']);
    for (const [name, service] of Object.entries(services)) {
      if (service.profiles?.length) continue;
      for (const [dependency, how] of Object.entries(service.depends_on ?? {})) {
        if (profiled.has(dependency)) expect(how.required, `${name} -> ${dependency}`).toBe(false);
      }
    }
    // with the profile, the API and the worker wait for a healthy sandbox, and would use it with PAYGATE_SANDBOX=true
    for (const name of ['api', 'worker']) {
      const service = services[name]!;
      expect(service.depends_on?.sandbox).toEqual({ condition: 'service_healthy', required: false });
      // off unless .env (or the shell) says PAYGATE_SANDBOX=true
      expect(service.environment?.PAYGATE_SANDBOX).toMatch(/^\$\{PAYGATE_SANDBOX:-false\}$/);
      expect(service.environment?.SANDBOX_GATEWAY_URL).toBe(`http://sandbox:${services.sandbox!.environment!.SANDBOX_PORT}`);
      expect(service.environment?.SANDBOX_TOKEN).toBe(services.sandbox!.environment!.SANDBOX_TOKEN);
    }
  });

  it('gives every service a healthcheck; paygate’s own ask its port with node and nothing compose would rewrite', () => {
    for (const [name, service] of Object.entries(services)) {
      expect(service.healthcheck?.test?.length, name).toBeGreaterThan(1);
      if (service.build === undefined) continue;
      // `$` would be compose's interpolation, not the one-liner's
      expect(nodeCheck(name), name).not.toContain('$');
    }
    expect(new Set(Object.keys(services).filter((name) => services[name]!.build !== undefined))).toEqual(
      new Set(['sandbox', 'api', 'worker']),
    );
    expect(portOf(nodeCheck('api'))).toBe(Number(services.api!.environment!.PORT));
    expect(nodeCheck('api')).toContain('/health');
    expect(portOf(nodeCheck('sandbox'))).toBe(Number(services.sandbox!.environment!.SANDBOX_PORT));
    expect(nodeCheck('sandbox')).toContain('/health');
    expect(portOf(nodeCheck('worker'))).toBe(Number(services.worker!.environment!.WORKER_METRICS_PORT));
    expect(nodeCheck('worker')).toContain('/metrics');
  });
});

describe('the healthcheck one-liners', () => {
  let apiStatus = 200;
  let api: Server;
  let apiPort: number;
  beforeAll(async () => {
    api = createServer((req, res) => {
      res.writeHead(req.url === '/health' ? apiStatus : 404, { 'content-type': 'application/json' });
      res.end('{}');
    });
    await new Promise<void>((done) => api.listen(0, '127.0.0.1', done));
    apiPort = (api.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((done) => api?.close(done));
  });

  it('the sandbox’s: 0 while the standalone sandbox answers, 1 once it is gone', async () => {
    const sandbox = await startSandboxGateways({ token: 'compose-check-token-0123456789' });
    const port = Number(new URL(sandbox.url).port);
    try {
      expect(await runCheck(nodeCheck('sandbox'), port)).toBe(0);
    } finally {
      await sandbox.close();
    }
    expect(await runCheck(nodeCheck('sandbox'), port)).toBe(1);
  });

  it('the worker’s: 0 with the container’s ADMIN_TOKEN on its metrics listener, 1 with another token', async () => {
    const adminToken = 'compose-check-admin-token-0123456789';
    const listener = await startMetricsListener({
      host: '127.0.0.1',
      port: 0,
      adminToken,
      metrics: createMetrics({ processMetrics: false }),
    });
    const port = Number(new URL(listener.address).port);
    try {
      expect(await runCheck(nodeCheck('worker'), port, { ADMIN_TOKEN: adminToken })).toBe(0);
      expect(await runCheck(nodeCheck('worker'), port, { ADMIN_TOKEN: 'another-token-0123456789abcdef' })).toBe(1);
    } finally {
      await listener.close();
    }
  });

  it('the API’s: 0 on 200 from /health, 1 on its 503 and when nothing answers', async () => {
    apiStatus = 200;
    expect(await runCheck(nodeCheck('api'), apiPort)).toBe(0);
    apiStatus = 503;
    expect(await runCheck(nodeCheck('api'), apiPort)).toBe(1);
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const freePort = (closed.address() as AddressInfo).port;
    await new Promise((done) => closed.close(done));
    expect(await runCheck(nodeCheck('api'), freePort)).toBe(1);
  });
});
