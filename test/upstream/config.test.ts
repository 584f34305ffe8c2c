// A project's upstream provider configuration over the admin API: the real app, the real database. The provider's
// secret is sealed at rest, never logged, shown masked; a refused URL or a malformed body changes nothing.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { runAdminCli } from '../../src/cli/admin.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import { dashboardSignIn } from './fixtures.js';

const SECRET = 'Zq8v-provider-secret-0123456789abcdef';
const admin = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };

let t: TestApp;
let project: TestProject;

beforeAll(async () => {
  t = await buildTestApp();
  project = await t.createProject();
});
afterAll(async () => {
  await t?.close();
});

const path = (applicationId: string) => `/admin/v1/projects/${applicationId}/upstream`;
const put = (applicationId: string, body: unknown) =>
  t.app.inject({ method: 'PUT', url: path(applicationId), headers: admin, payload: body as object });
const get = (applicationId: string) => t.app.inject({ method: 'GET', url: path(applicationId), headers: admin });

const config = (overrides: Record<string, unknown> = {}) => ({
  base_url: 'http://127.0.0.1:9999/',
  client_key: 'provider-client-key',
  secret_key: SECRET,
  pgs: ['nicepay', 'sandbox_card', 'nicepay'],
  ...overrides,
});

describe('PUT / GET / DELETE /admin/v1/projects/{application_id}/upstream', () => {
  it('stores the configuration, shows the secret masked and the notification URL to register at the provider', async () => {
    const res = await put(project.applicationId, config({ message_url: 'http://127.0.0.1:9998' }));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      application_id: project.applicationId,
      base_url: 'http://127.0.0.1:9999',
      client_key: 'provider-client-key',
      secret_key: 'Zq8v********',
      pgs: ['nicepay', 'sandbox_card'],
      message_url: 'http://127.0.0.1:9998',
      notification_url: `http://127.0.0.1:${t.deps.config.port}/upstream/v1/notifications/${project.applicationId}`,
    });
    expect(body).not.toHaveProperty('last_error');
    expect((await get(project.applicationId)).json()).toEqual(body);
  });

  it('seals the secret at rest and never logs it', async () => {
    await put(project.applicationId, config());
    const rows = await sql<{ row: string }>`select row_to_json(u)::text as row from upstreams u`.execute(t.deps.database.db);
    expect(rows.rows.length).toBeGreaterThan(0);
    for (const { row } of rows.rows) expect(row).not.toContain(SECRET.slice(4));
    expect(t.logs()).not.toContain(SECRET.slice(4));
    expect(t.logs()).toContain('project upstream configured');
  });

  it('replaces the configuration with a second PUT', async () => {
    const res = await put(project.applicationId, config({ secret_key: 'short', pgs: ['kcp'] }));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ secret_key: '********', pgs: ['kcp'] });
  });

  it.each([
    ['ftp://provider.example', 'only http and https'],
    ['https://user:pw@provider.example', 'credentials'],
    ['https://provider.example/v2', 'before /v2'],
    ['https://provider.example/?a=1', 'query'],
    ['not a url', 'cannot be parsed'],
  ])('refuses base_url %s with 9476 and keeps what was stored', async (baseUrl, reason) => {
    const before = (await get(project.applicationId)).json();
    const res = await put(project.applicationId, config({ base_url: baseUrl }));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error_code: 'UPSTREAM_URL_INVALID', code: 9476 });
    expect(res.json().payload.message).toContain('base_url');
    expect(res.json().payload.message).toContain(reason);
    expect((await get(project.applicationId)).json()).toEqual(before);
  });

  it.each([[{ secret_key: '' }], [{ pgs: [] }], [{ client_key: undefined }], [{ extra: true }], [{ pgs: 'nicepay' }]])(
    'refuses a malformed body %j with 9400',
    async (overrides) => {
      const res = await put(project.applicationId, config(overrides));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error_code: 'INVALID_REQUEST', code: 9400 });
    },
  );

  it('answers 9426 for an unknown project and 9401 without the admin token', async () => {
    const unknown = await put('0123456789abcdef01234567', config());
    expect(unknown.json()).toMatchObject({ error_code: 'PROJECT_NOT_FOUND', code: 9426 });
    const anonymous = await t.app.inject({ method: 'GET', url: path(project.applicationId) });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json()).toMatchObject({ error_code: 'ADMIN_UNAUTHORIZED' });
  });

  it('DELETE makes the project local again; a second DELETE and GET answer 9477', async () => {
    await put(project.applicationId, config());
    const removed = await t.app.inject({ method: 'DELETE', url: path(project.applicationId), headers: admin });
    expect(removed.statusCode).toBe(200);
    expect(removed.json()).toEqual({ application_id: project.applicationId, deleted: true });
    const again = await t.app.inject({ method: 'DELETE', url: path(project.applicationId), headers: admin });
    expect(again.statusCode).toBe(404);
    expect(again.json()).toMatchObject({ error_code: 'UPSTREAM_NOT_CONFIGURED', code: 9477 });
    expect((await get(project.applicationId)).json()).toMatchObject({ code: 9477 });
  });
});

describe('the dashboard', () => {
  it("shows each project's provider on the admin's projects page, read-only and without its secret", async () => {
    await put(project.applicationId, config({ pgs: ['shown_pg'] }));
    const admin = await dashboardSignIn(t, { admin_token: TEST_ADMIN_TOKEN });
    const page = await t.app.inject({ url: '/dashboard/projects', headers: { cookie: admin } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Upstream provider');
    expect(page.body).toContain('http://127.0.0.1:9999');
    expect(page.body).toContain('shown_pg');
    expect(page.body).not.toContain(SECRET.slice(4));
    expect(page.body).not.toContain('<form method="post" action="/dashboard/upstream');
  });
});

describe('production mode', () => {
  let prod: TestApp;
  let prodProject: TestProject;
  beforeAll(async () => {
    prod = await buildTestApp({
      env: { PAYGATE_SANDBOX: 'false', PUBLIC_BASE_URL: 'https://pay.example.com/' },
      // provider.example resolves to a public address, internal.example to a private one
      webhookResolve: async (host) =>
        host === 'internal.example' ? [{ address: '10.0.0.7', family: 4 }] : [{ address: '93.184.215.14', family: 4 }],
    });
    prodProject = await prod.createProject();
  });
  afterAll(async () => {
    await prod?.close();
  });

  const prodPut = (body: unknown) =>
    prod.app.inject({ method: 'PUT', url: path(prodProject.applicationId), headers: admin, payload: body as object });

  it.each([
    ['http://provider.example', 'https'],
    ['https://127.0.0.1', 'loopback'],
    ['https://[::1]', 'loopback'],
    ['https://169.254.169.254', 'linkLocal'],
    ['https://10.1.2.3', 'private'],
    ['https://localhost', 'loopback'],
    ['https://internal.example', 'private'],
  ])('refuses base_url %s (%s)', async (baseUrl, reason) => {
    const res = await prodPut(config({ base_url: baseUrl }));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error_code: 'UPSTREAM_URL_INVALID', code: 9476 });
    expect(res.json().payload.message).toContain(reason);
    expect((await prod.app.inject({ method: 'GET', url: path(prodProject.applicationId), headers: admin })).statusCode).toBe(404);
  });

  it('accepts https to a public host, with the notification URL on PUBLIC_BASE_URL', async () => {
    const res = await prodPut(config({ base_url: 'https://provider.example' }));
    expect(res.statusCode).toBe(200);
    expect(res.json().notification_url).toBe(`https://pay.example.com/upstream/v1/notifications/${prodProject.applicationId}`);
  });
});

async function cli(argv: string[], env: NodeJS.ProcessEnv) {
  let out = '';
  let err = '';
  const sink = (append: (text: string) => void) =>
    new Writable({
      write(chunk: Buffer | string, _encoding, callback) {
        append(chunk.toString());
        callback();
      },
    });
  const code = await runAdminCli(
    argv,
    env,
    sink((text) => (out += text)),
    sink((text) => (err += text)),
  );
  return { code, out, err };
}

describe('admin CLI: upstream-set / upstream-get / upstream-delete', () => {
  it('over HTTP: the secret comes from PAYGATE_UPSTREAM_SECRET_KEY and is printed masked', async () => {
    const url = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const cliProject = await t.createProject();
    const env = { ADMIN_TOKEN: TEST_ADMIN_TOKEN, PAYGATE_URL: url, PAYGATE_UPSTREAM_SECRET_KEY: SECRET };
    const set = await cli(
      [
        'projects',
        'upstream-set',
        cliProject.applicationId,
        '--base-url',
        'http://127.0.0.1:9999',
        '--client-key',
        'ck',
        '--pgs',
        'nicepay,kcp',
      ],
      env,
    );
    expect(set.err).toBe('');
    expect(set.code).toBe(0);
    expect(JSON.parse(set.out)).toMatchObject({
      base_url: 'http://127.0.0.1:9999',
      pgs: ['nicepay', 'kcp'],
      secret_key: 'Zq8v********',
    });
    expect(set.out).not.toContain(SECRET.slice(4));
    const shown = await cli(['projects', 'upstream-get', cliProject.applicationId], env);
    expect(JSON.parse(shown.out)).toEqual(JSON.parse(set.out));
    const refused = await cli(
      ['projects', 'upstream-set', cliProject.applicationId, '--base-url', 'ftp://x', '--client-key', 'ck', '--pgs', 'kcp'],
      env,
    );
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.err)).toMatchObject({ error_code: 'UPSTREAM_URL_INVALID' });
    const deleted = await cli(['projects', 'upstream-delete', cliProject.applicationId], env);
    expect(JSON.parse(deleted.out)).toEqual({ application_id: cliProject.applicationId, deleted: true });
    const gone = await cli(['projects', 'upstream-get', cliProject.applicationId], env);
    expect(gone.code).toBe(1);
    expect(JSON.parse(gone.err)).toMatchObject({ error_code: 'UPSTREAM_NOT_CONFIGURED' });
    const noSecret = await cli(['projects', 'upstream-set', cliProject.applicationId, '--base-url', 'http://127.0.0.1:1'], {
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      PAYGATE_URL: url,
    });
    expect(noSecret.code).toBe(2);
    expect(noSecret.err).toContain('PAYGATE_UPSTREAM_SECRET_KEY');
  });

  it('--direct on the database itself (PGlite under DATA_DIR), the secret sealed with its keyring', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'paygate-upstream-cli-'));
    try {
      const env = { DATA_DIR: dataDir, PAYGATE_UPSTREAM_SECRET_KEY: SECRET };
      const created = JSON.parse((await cli(['projects', 'create', '--direct', '--name', 'Direct'], env)).out);
      const set = await cli(
        [
          'projects',
          'upstream-set',
          created.application_id,
          '--direct',
          '--base-url',
          'http://127.0.0.1:9999',
          '--client-key',
          'ck',
          '--pgs',
          'kcp',
        ],
        env,
      );
      expect(set.err).toBe('');
      expect(JSON.parse(set.out)).toMatchObject({ secret_key: 'Zq8v********', pgs: ['kcp'] });
      const shown = await cli(['projects', 'upstream-get', created.application_id, '--direct'], env);
      expect(JSON.parse(shown.out).notification_url).toMatch(/\/upstream\/v1\/notifications\/[0-9a-f]{24}$/);
      const deleted = await cli(['projects', 'upstream-delete', created.application_id, '--direct'], env);
      expect(deleted.code).toBe(0);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
