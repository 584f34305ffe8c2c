import { afterEach, describe, expect, it } from 'vitest';
import { HEALTH_OK_REUSE_MS } from '../../src/api/routes/health.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

describe('GET /health', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('answers 200 {status:"ok"} when the database answers', async () => {
    t = await buildTestApp();
    const res = await t.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('answers 503 naming the database when it does not answer', async () => {
    t = await buildTestApp();
    await t.deps.database.close();
    const res = await t.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(503);
    const body = res.json();
    expect(body.error_code).toBe('SERVICE_UNAVAILABLE');
    expect(body.code).toBe(9503);
    expect(body.not_ready).toEqual(['database']);
    expect(body.message).toContain('database');
  });

  it('answers 503 naming each readiness probe that fails, 200 once they pass', async () => {
    let engineUp = false;
    t = await buildTestApp({
      readiness: {
        engine: () => engineUp,
        worker: async () => {
          throw new Error('worker not polling');
        },
      },
    });
    const down = await t.app.inject({ method: 'GET', url: '/health' });
    expect(down.statusCode).toBe(503);
    expect(down.json().not_ready).toEqual(['engine', 'worker']);
    expect(down.body).not.toContain('worker not polling');

    engineUp = true;
    const half = await t.app.inject({ method: 'GET', url: '/health' });
    expect(half.json().not_ready).toEqual(['worker']);
  });

  it('writes no request log lines while it passes; a failing round writes its warning', async () => {
    let workerUp = true;
    t = await buildTestApp({ readiness: { worker: () => workerUp } });
    expect((await t.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    // the same app logs other requests at info
    await t.app.inject({ method: 'GET', url: '/no-such-route' });
    expect(t.logs()).toContain('/no-such-route');
    expect(t.logs()).not.toContain('/health');

    workerUp = false;
    await new Promise((resolve) => setTimeout(resolve, HEALTH_OK_REUSE_MS + 50));
    expect((await t.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(503);
    const warning = t
      .logs()
      .split('\n')
      .filter((line) => line.includes('health check failed'))
      .map((line) => JSON.parse(line) as { level: number | string; not_ready: string[] });
    expect(warning).toHaveLength(1);
    expect(warning[0]!.not_ready).toEqual(['worker']);
  });

  it('needs no authentication', async () => {
    t = await buildTestApp();
    const res = await t.app.inject({ method: 'GET', url: '/health', headers: { authorization: 'Basic garbage' } });
    expect(res.statusCode).toBe(200);
  });

  it('reuses a passing round for a second, shares a round among concurrent calls, and never reuses a failure', async () => {
    let probes = 0;
    let workerUp = true;
    let release: (() => void) | undefined;
    t = await buildTestApp({
      readiness: {
        worker: async () => {
          probes++;
          if (release === undefined) await new Promise<void>((resolve) => (release = resolve));
          return workerUp;
        },
      },
    });
    // five calls while the first round waits on its probe: one round answers all of them
    const calls = Array.from({ length: 5 }, () => t!.app.inject({ method: 'GET', url: '/health' }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    release!();
    for (const res of await Promise.all(calls)) expect(res.statusCode).toBe(200);
    expect(probes).toBe(1);

    // within the second the pass is reused, even though the worker went down meanwhile
    workerUp = false;
    expect((await t.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    expect(probes).toBe(1);

    // after it, the failure shows, and is asked again on every call until it passes
    await new Promise((resolve) => setTimeout(resolve, HEALTH_OK_REUSE_MS + 50));
    expect((await t.app.inject({ method: 'GET', url: '/health' })).json().not_ready).toEqual(['worker']);
    expect((await t.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(503);
    expect(probes).toBe(3);
    workerUp = true;
    expect((await t.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    expect(probes).toBe(4);
  });
});
