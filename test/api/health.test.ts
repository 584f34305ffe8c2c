import { afterEach, describe, expect, it } from 'vitest';
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

  it('needs no authentication', async () => {
    t = await buildTestApp();
    const res = await t.app.inject({ method: 'GET', url: '/health', headers: { authorization: 'Basic garbage' } });
    expect(res.statusCode).toBe(200);
  });
});
