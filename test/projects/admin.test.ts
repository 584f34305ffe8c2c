// Admin API (Bearer ADMIN_TOKEN) and the admin CLI over the same project service.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCli } from '../../src/cli/admin.js';
import { hashSecret } from '../../src/platform/ids.js';
import { SCOPES } from '../../src/projects/scopes.js';
import { basicAuthHeader, buildTestApp, TEST_ADMIN_TOKEN, type TestApp } from '../helpers/app.js';

const ADMIN = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };

describe('admin API', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  const create = (payload: unknown, headers: Record<string, string> = ADMIN) =>
    t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers, payload: payload as object });
  const patch = (id: string, payload: unknown) =>
    t.app.inject({ method: 'PATCH', url: `/admin/v1/projects/${id}`, headers: ADMIN, payload: payload as object });

  /** proves a set of keys works: issue a token with the private key, call the API with Basic */
  async function keysWork(project: { application_id: string; client_key: string; secret_key: string; private_key: string }) {
    const token = await t.app.inject({
      method: 'POST',
      url: '/v2/request/token',
      payload: { application_id: project.application_id, private_key: project.private_key },
    });
    const basic = await t.app.inject({
      method: 'GET',
      url: '/v2/receipt/000000000000000000000000',
      headers: { authorization: basicAuthHeader(project.client_key, project.secret_key) },
    });
    return { token: token.statusCode, basic: basic.json().error_code as string };
  }

  it('refuses calls without the admin token', async () => {
    for (const headers of [
      {} as Record<string, string>,
      { authorization: 'Bearer wrong-token-wrong-token' },
      { authorization: `Basic ${Buffer.from(`x:${TEST_ADMIN_TOKEN}`).toString('base64')}` },
      { authorization: TEST_ADMIN_TOKEN },
    ]) {
      const res = await create({ name: 'x' }, headers);
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ error_code: 'ADMIN_UNAUTHORIZED', code: 9401 });
    }
    const list = await t.app.inject({ method: 'GET', url: '/admin/v1/projects' });
    expect(list.statusCode).toBe(401);
  });

  it('POST creates a project with the defaults and shows its secrets once', async () => {
    const res = await create({ name: 'Shop' });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({
      name: 'Shop',
      seller: true,
      scopes: [...SCOPES],
      allowed_ips: [],
      api_version: '2.5',
      merchant: {},
      pgs: [...t.deps.gateways.names],
      escrow_reconcile_hours: 72,
    });
    expect(body.application_id).toMatch(/^[0-9a-f]{24}$/);
    for (const key of ['client_key', 'secret_key', 'private_key']) expect(body[key]).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(body).not.toHaveProperty('webhook_url');
    expect(body).not.toHaveProperty('key_expires_at');
    expect(body.created_at).toMatch(/\+09:00$/);
    expect(await keysWork(body)).toEqual({ token: 200, basic: 'RC_NOT_FOUND' });

    const shown = await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${body.application_id}`, headers: ADMIN });
    expect(shown.statusCode).toBe(200);
    expect(shown.json()).not.toHaveProperty('secret_key');
    expect(shown.json()).not.toHaveProperty('private_key');
    expect(shown.body).not.toContain(body.secret_key);
    expect(shown.body).not.toContain('hash');
  });

  it('stores the secrets hashed', async () => {
    const body = (await create({ name: 'Hashed' })).json();
    const row = await t.deps.database.db
      .selectFrom('projects')
      .selectAll()
      .where('application_id', '=', body.application_id)
      .executeTakeFirstOrThrow();
    expect(row.secret_key_hash).toBe(hashSecret(body.secret_key));
    expect(row.private_key_hash).toBe(hashSecret(body.private_key));
    expect(JSON.stringify(row)).not.toContain(body.secret_key);
    expect(JSON.stringify(row)).not.toContain(body.private_key);
  });

  it('POST takes every field', async () => {
    const input = {
      name: 'Full',
      seller: false,
      scopes: ['billing_key', 'receipt'],
      allowed_ips: ['127.0.0.1', '10.0.0.0/8', '::1'],
      api_version: '2.4',
      webhook_url: 'https://93.184.216.34/webhook',
      merchant: { company_name: 'ACME', addr1: 'Seoul', addr2: '1F', zipcode: '04524', phone: '0212345678' },
      key_expires_at: '2030-01-01T00:00:00+09:00',
      pgs: ['sandbox_card'],
      escrow_reconcile_hours: 24,
    };
    const res = await create(input);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ ...input, key_expires_at: '2030-01-01T00:00:00+09:00' });
  });

  it('refuses invalid input with INVALID_REQUEST and creates nothing', async () => {
    const before = (await t.app.inject({ method: 'GET', url: '/admin/v1/projects', headers: ADMIN })).json().count;
    const bad: unknown[] = [
      {},
      { name: '' },
      { name: 'x', scopes: ['no_such_scope'] },
      { name: 'x', allowed_ips: ['999.1.1.1'] },
      { name: 'x', pgs: ['no_such_pg'] },
      { name: 'x', seller: 'yes' },
      { name: 'x', webhook_url: 'ftp://example.com' },
      { name: 'x', key_expires_at: 'tomorrow' },
      { name: 'x', api_version: 'latest' },
      { name: 'x', unknown_field: 1 },
      { name: 'x', merchant: { company_name: 'A', surprise: true } },
      // escrow_reconcile_hours: a whole number of hours from 1 to a year
      { name: 'x', escrow_reconcile_hours: 0 },
      { name: 'x', escrow_reconcile_hours: -5 },
      { name: 'x', escrow_reconcile_hours: 1.5 },
      { name: 'x', escrow_reconcile_hours: 8761 },
      { name: 'x', escrow_reconcile_hours: '72' },
      { name: 'x', escrow_reconcile_hours: null },
    ];
    for (const payload of bad) {
      const res = await create(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json()).toMatchObject({ error_code: 'INVALID_REQUEST', code: 9400 });
    }
    const after = (await t.app.inject({ method: 'GET', url: '/admin/v1/projects', headers: ADMIN })).json().count;
    expect(after).toBe(before);
  });

  it('PATCH changes the given fields only, and the change takes effect on authentication', async () => {
    const created = (await create({ name: 'Patchable', merchant: { company_name: 'Old' } })).json();
    const res = await patch(created.application_id, {
      name: 'Renamed',
      allowed_ips: ['10.9.9.9'],
      webhook_url: 'https://93.184.216.34/x',
      merchant: { company_name: 'New', phone: '021111' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      application_id: created.application_id,
      name: 'Renamed',
      seller: true,
      allowed_ips: ['10.9.9.9'],
      webhook_url: 'https://93.184.216.34/x',
      merchant: { company_name: 'New', phone: '021111' },
      client_key: created.client_key,
    });
    expect((await keysWork(created)).basic).toBe('APP_FIREWALL_BLOCKED');

    const cleared = await patch(created.application_id, { allowed_ips: [], webhook_url: null, seller: false });
    expect(cleared.json()).not.toHaveProperty('webhook_url');
    expect(cleared.json().seller).toBe(false);
    expect((await keysWork(created)).basic).toBe('RC_NOT_FOUND');

    const expired = await patch(created.application_id, { key_expires_at: '2020-01-01T00:00:00Z' });
    expect(expired.json().key_expires_at).toBe('2020-01-01T09:00:00+09:00');
    // receipt lookup checks a scope, so an expired key is refused there with 1218 (the spec's "at scope check")
    expect((await keysWork(created)).basic).toBe('APP_CLIENT_KEY_EXPIRED');
    expect((await patch(created.application_id, { key_expires_at: null })).json()).not.toHaveProperty('key_expires_at');
  });

  it('PATCH sets escrow_reconcile_hours within its bounds, shown by GET; out of bounds changes nothing', async () => {
    const created = (await create({ name: 'Escrow shop' })).json();
    for (const hours of [1, 8760, 6]) {
      const res = await patch(created.application_id, { escrow_reconcile_hours: hours });
      expect(res.statusCode).toBe(200);
      expect(res.json().escrow_reconcile_hours).toBe(hours);
    }
    for (const hours of [0, 8761, 2.5, 'soon']) {
      const res = await patch(created.application_id, { escrow_reconcile_hours: hours });
      expect(res.statusCode, String(hours)).toBe(400);
      expect(res.json()).toMatchObject({ error_code: 'INVALID_REQUEST', code: 9400 });
    }
    const shown = await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${created.application_id}`, headers: ADMIN });
    expect(shown.json().escrow_reconcile_hours).toBe(6);
  });

  it('PATCH of an unknown project -> 404 PROJECT_NOT_FOUND; a malformed id -> INVALID_REQUEST', async () => {
    const unknown = await patch('ffffffffffffffffffffffff', { name: 'x' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ error_code: 'PROJECT_NOT_FOUND', code: 9426 });
    const malformed = await patch('not-an-id', { name: 'x' });
    expect(malformed.json()).toMatchObject({ error_code: 'INVALID_REQUEST' });
    const bad = await patch((await create({ name: 'y' })).json().application_id, { scopes: 'all' });
    expect(bad.json()).toMatchObject({ error_code: 'INVALID_REQUEST' });
  });

  it('GET lists projects without secrets', async () => {
    const created = (await create({ name: 'Listed' })).json();
    const res = await t.app.inject({ method: 'GET', url: '/admin/v1/projects', headers: ADMIN });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.count).toBe(body.list.length);
    expect(body.list.map((p: { application_id: string }) => p.application_id)).toContain(created.application_id);
    expect(res.body).not.toContain(created.secret_key);
    expect(res.body).not.toContain(created.private_key);
  });

  it('project keys are not admin credentials and the admin token is not a project key', async () => {
    const created = (await create({ name: 'Keys' })).json();
    const asProject = await create({ name: 'x' }, { authorization: basicAuthHeader(created.client_key, created.secret_key) });
    expect(asProject.statusCode).toBe(401);
    const asAdmin = await t.app.inject({ method: 'GET', url: '/v2/receipt/000000000000000000000000', headers: ADMIN });
    expect(asAdmin.json()).toMatchObject({ error_code: 'ACCESS_TOKEN_INVALID' });
  });
});

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString();
    callback();
  }
}

async function cli(argv: string[], env: NodeJS.ProcessEnv) {
  const out = new Capture();
  const err = new Capture();
  const code = await runAdminCli(argv, env, out, err);
  return { code, out: out.text, err: err.text };
}

describe('admin CLI', () => {
  let t: TestApp;
  let url: string;
  beforeAll(async () => {
    t = await buildTestApp();
    url = await t.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('creates, updates, shows and lists projects over HTTP', async () => {
    const env = { ADMIN_TOKEN: TEST_ADMIN_TOKEN, PAYGATE_URL: url };
    const created = await cli(
      [
        'projects',
        'create',
        '--name',
        'CLI Shop',
        '--seller',
        'false',
        '--scopes',
        'billing_key,receipt',
        '--merchant-company-name',
        'ACME',
        '--merchant-zipcode',
        '04524',
        '--allowed-ips',
        '127.0.0.1',
      ],
      env,
    );
    expect(created.err).toBe('');
    expect(created.code).toBe(0);
    const project = JSON.parse(created.out);
    expect(project).toMatchObject({
      name: 'CLI Shop',
      seller: false,
      scopes: ['billing_key', 'receipt'],
      merchant: { company_name: 'ACME', zipcode: '04524' },
      allowed_ips: ['127.0.0.1'],
    });
    expect(project.secret_key).toBeTruthy();
    const row = await t.deps.database.db
      .selectFrom('projects')
      .selectAll()
      .where('application_id', '=', project.application_id)
      .executeTakeFirst();
    expect(row?.name).toBe('CLI Shop');

    const updated = await cli(
      ['projects', 'update', project.application_id, '--name', 'Renamed', '--webhook-url', 'https://93.184.216.34/h'],
      env,
    );
    expect(updated.code).toBe(0);
    expect(JSON.parse(updated.out)).toMatchObject({ name: 'Renamed', webhook_url: 'https://93.184.216.34/h', seller: false });

    const reconcile = await cli(['projects', 'update', project.application_id, '--escrow-reconcile-hours', '12'], env);
    expect(reconcile.code).toBe(0);
    expect(JSON.parse(reconcile.out).escrow_reconcile_hours).toBe(12);
    const outOfRange = await cli(['projects', 'update', project.application_id, '--escrow-reconcile-hours', '0'], env);
    expect(outOfRange.code).toBe(1);
    expect(JSON.parse(outOfRange.err)).toMatchObject({ error_code: 'INVALID_REQUEST', code: 9400 });

    const shown = await cli(['projects', 'get', project.application_id], env);
    expect(JSON.parse(shown.out)).toMatchObject({ name: 'Renamed', escrow_reconcile_hours: 12 });
    expect(shown.out).not.toContain(project.secret_key);

    const listed = await cli(['projects', 'list'], env);
    expect(JSON.parse(listed.out).list.map((p: { application_id: string }) => p.application_id)).toContain(
      project.application_id,
    );
  });

  it('rotates the webhook signing secret over HTTP; the first webhook_url shows its secret once', async () => {
    const env = { ADMIN_TOKEN: TEST_ADMIN_TOKEN, PAYGATE_URL: url };
    const created = await cli(['projects', 'create', '--name', 'Hooked', '--webhook-url', 'https://93.184.216.34/h'], env);
    const project = JSON.parse(created.out);
    expect(project.webhook_secret).toMatch(/^whsec_/);
    const rotated = await cli(['projects', 'rotate-webhook-secret', project.application_id], env);
    expect(rotated.code).toBe(0);
    expect(JSON.parse(rotated.out)).toMatchObject({
      application_id: project.application_id,
      webhook_secret: expect.stringMatching(/^whsec_/),
    });
    expect(JSON.parse(rotated.out).webhook_secret).not.toBe(project.webhook_secret);
    const shown = await cli(['projects', 'get', project.application_id], env);
    expect(shown.out).not.toContain(project.webhook_secret);
    const missing = await cli(['projects', 'rotate-webhook-secret'], env);
    expect(missing.code).toBe(2);
  });

  it('prints the catalog error and exits 1 when the server refuses', async () => {
    const res = await cli(['projects', 'create', '--name', 'x', '--scopes', 'bogus'], {
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      PAYGATE_URL: url,
    });
    expect(res.code).toBe(1);
    expect(JSON.parse(res.err)).toMatchObject({ error_code: 'INVALID_REQUEST' });
    const wrongToken = await cli(['projects', 'list'], { ADMIN_TOKEN: 'another-admin-token-xxxxxxxx', PAYGATE_URL: url });
    expect(wrongToken.code).toBe(1);
    expect(JSON.parse(wrongToken.err)).toMatchObject({ error_code: 'ADMIN_UNAUTHORIZED' });
  });

  it('usage errors exit 2 with the usage text; --help exits 0', async () => {
    const env = { ADMIN_TOKEN: TEST_ADMIN_TOKEN, PAYGATE_URL: url };
    for (const argv of [
      ['widgets', 'list'],
      ['projects', 'explode'],
      ['projects', 'update'],
      ['projects', 'create', '--bogus-flag', 'x'],
      ['projects', 'create', '--seller', 'maybe'],
      ['projects', 'create', '--name', 'x', '--escrow-reconcile-hours', 'three days'],
    ]) {
      const res = await cli(argv, env);
      expect(res.code, argv.join(' ')).toBe(2);
      expect(res.err).toContain('usage:');
    }
    const help = await cli(['--help'], env);
    expect(help.code).toBe(0);
    expect(help.out).toContain('projects <command>');
  });

  it('without ADMIN_TOKEN it says what to do instead of calling the server', async () => {
    const res = await cli(['projects', 'list'], { PAYGATE_URL: url });
    expect(res.code).toBe(2);
    expect(res.err).toContain('ADMIN_TOKEN');
  });

  it('--direct runs the same service on the database itself (PGlite under DATA_DIR)', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'paygate-cli-'));
    try {
      const env = { DATA_DIR: dataDir };
      const created = await cli(['projects', 'create', '--direct', '--name', 'Direct'], env);
      expect(created.err).toBe('');
      expect(created.code).toBe(0);
      const project = JSON.parse(created.out);
      expect(project).toMatchObject({
        name: 'Direct',
        seller: true,
        pgs: ['sandbox_card', 'sandbox_noauto', 'sandbox_identity', 'sandbox_escrow_a', 'sandbox_escrow_b'],
        escrow_reconcile_hours: 72,
      });
      const reconcile = await cli(
        ['projects', 'update', project.application_id, '--direct', '--escrow-reconcile-hours', '48'],
        env,
      );
      expect(JSON.parse(reconcile.out).escrow_reconcile_hours).toBe(48);
      const tooLong = await cli(
        ['projects', 'update', project.application_id, '--direct', '--escrow-reconcile-hours', '9000'],
        env,
      );
      expect(tooLong.code).toBe(1);
      expect(JSON.parse(tooLong.err)).toMatchObject({ error_code: 'INVALID_REQUEST' });
      const listed = await cli(['projects', 'list', '--direct'], env);
      expect(JSON.parse(listed.out).list).toHaveLength(1);
      const bad = await cli(['projects', 'update', project.application_id, '--direct', '--pgs', 'nope'], env);
      expect(bad.code).toBe(1);
      expect(JSON.parse(bad.err)).toMatchObject({ error_code: 'INVALID_REQUEST' });
      // the first webhook_url prints its signing secret once (sealed with the DATA_DIR keyring); a rotation a new one
      const hooked = await cli(
        ['projects', 'update', project.application_id, '--direct', '--webhook-url', 'https://93.184.216.34/h'],
        env,
      );
      expect(JSON.parse(hooked.out).webhook_secret).toMatch(/^whsec_/);
      const rotated = await cli(['projects', 'rotate-webhook-secret', project.application_id, '--direct'], env);
      expect(rotated.code).toBe(0);
      const answer = JSON.parse(rotated.out);
      expect(answer.webhook_secret).toMatch(/^whsec_/);
      expect(answer.webhook_secret).not.toBe(JSON.parse(hooked.out).webhook_secret);
      expect(answer.previous_webhook_secret_expires_at).toEqual(expect.any(String));
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('sandbox PGs only in sandbox mode', () => {
  it('outside sandbox mode a project gets no sandbox PG, by default or on request', async () => {
    // the helper still wires the sandbox gateways: the project service alone must keep them out
    const t = await buildTestApp({ env: { PAYGATE_SANDBOX: 'false', PUBLIC_BASE_URL: 'https://pay.example' } });
    try {
      expect(t.deps.config.sandbox).toBe(false);
      const created = await t.app.inject({
        method: 'POST',
        url: '/admin/v1/projects',
        headers: ADMIN,
        payload: { name: 'prod' },
      });
      expect(created.statusCode).toBe(201);
      expect(created.json().pgs).toEqual([]);
      for (const pgs of [['sandbox_card'], ['sandbox_identity']]) {
        const asked = await t.app.inject({
          method: 'POST',
          url: '/admin/v1/projects',
          headers: ADMIN,
          payload: { name: 'x', pgs },
        });
        expect(asked.json()).toMatchObject({ error_code: 'INVALID_REQUEST', code: 9400 });
        const patched = await t.app.inject({
          method: 'PATCH',
          url: `/admin/v1/projects/${created.json().application_id}`,
          headers: ADMIN,
          payload: { pgs },
        });
        expect(patched.json()).toMatchObject({ error_code: 'INVALID_REQUEST', code: 9400 });
      }
    } finally {
      await t.close();
    }
  });

  it('in sandbox mode a project gets the sandbox PGs by default', async () => {
    const t = await buildTestApp({ env: { PAYGATE_SANDBOX: 'true' } });
    try {
      const created = await t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: ADMIN, payload: { name: 'dev' } });
      expect(created.json().pgs).toEqual([
        'sandbox_card',
        'sandbox_noauto',
        'sandbox_identity',
        'sandbox_escrow_a',
        'sandbox_escrow_b',
      ]);
    } finally {
      await t.close();
    }
  });

  it('the CLI --direct gives sandbox PGs only in sandbox mode', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'paygate-cli-'));
    try {
      const env = { DATA_DIR: dataDir, PAYGATE_SANDBOX: 'false', PUBLIC_BASE_URL: 'https://pay.example' };
      const created = await cli(['projects', 'create', '--direct', '--name', 'Prod'], env);
      expect(created.err).toBe('');
      expect(JSON.parse(created.out).pgs).toEqual([]);
      const asked = await cli(['projects', 'create', '--direct', '--name', 'x', '--pgs', 'sandbox_card'], env);
      expect(asked.code).toBe(1);
      expect(JSON.parse(asked.err)).toMatchObject({ error_code: 'INVALID_REQUEST' });
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
