// ADMIN_PORT: the admin API on a listener of its own (loopback by default), over real sockets through
// `listen` as the entry points call it. The public listener answers 9404 for /admin/*, the admin
// listener serves nothing else; without ADMIN_PORT the public listener serves both as before.
import { afterEach, describe, expect, it } from 'vitest';
import { listen, type Listening } from '../../src/api/server.js';
import { parseConfig } from '../../src/platform/config/index.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp } from '../helpers/app.js';

const ADMIN = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };

let t: TestApp | undefined;
let listening: Listening | undefined;
afterEach(async () => {
  await listening?.close();
  listening = undefined;
  await t?.close();
  t = undefined;
});

async function get(base: string, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(new URL(path, base), { headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('admin listener', () => {
  it('with ADMIN_PORT, /admin/v1/* answers only on the admin listener (loopback) and 9404 on the public one', async () => {
    const config = parseConfig({ ADMIN_TOKEN: TEST_ADMIN_TOKEN, HOST: '127.0.0.1', PORT: '0', ADMIN_PORT: '0' });
    expect(config.admin).toEqual({ host: '127.0.0.1', port: 0 });
    t = await buildTestApp({ config });
    listening = await listen(t.app, config);
    expect(listening.adminAddress).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(listening.adminAddress).not.toBe(listening.address);

    const onPublic = await get(listening.address, '/admin/v1/projects', ADMIN);
    expect(onPublic.status).toBe(404);
    expect(onPublic.body).toMatchObject({ error_code: 'NOT_FOUND', code: 9404 });
    // a path variant does not slip through either
    expect((await get(listening.address, '/admin/v1/projects?x=1', ADMIN)).status).toBe(404);
    expect((await get(listening.address, '/admin', ADMIN)).status).toBe(404);

    const onAdmin = await get(listening.adminAddress!, '/admin/v1/projects', ADMIN);
    expect(onAdmin.status, JSON.stringify(onAdmin.body)).toBe(200);
    // still the admin API's own auth on its listener
    expect((await get(listening.adminAddress!, '/admin/v1/projects')).status).toBe(401);

    // the rest of the API stays on the public listener only
    expect((await get(listening.address, '/health')).status).toBe(200);
    const healthOnAdmin = await get(listening.adminAddress!, '/health');
    expect(healthOnAdmin.status).toBe(404);
    expect(healthOnAdmin.body.code).toBe(9404);
  });

  it('without ADMIN_PORT the public listener serves the admin API', async () => {
    const config = parseConfig({ ADMIN_TOKEN: TEST_ADMIN_TOKEN, HOST: '127.0.0.1', PORT: '0' });
    t = await buildTestApp({ config });
    listening = await listen(t.app, config);
    expect(listening.adminAddress).toBeUndefined();
    expect((await get(listening.address, '/admin/v1/projects', ADMIN)).status).toBe(200);
  });
});
