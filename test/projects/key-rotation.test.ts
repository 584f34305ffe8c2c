// Key rotation through the admin API and the admin CLI: new secret and private keys returned once, the
// old ones working for the grace period the caller chose (then refused), every access token revoked.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCli } from '../../src/cli/admin.js';
import { basicAuthHeader, buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';

const ADMIN = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };
const HOUR = 3_600_000;
const RECEIPT = '/v2/receipt/000000000000000000000000';

interface Rotated {
  application_id: string;
  client_key: string;
  secret_key: string;
  private_key: string;
  previous_keys_expire_at?: string;
}

describe('key rotation', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  const rotate = (applicationId: string, payload?: object, headers: Record<string, string> = ADMIN) =>
    t.app.inject({
      method: 'POST',
      url: `/admin/v1/projects/${applicationId}/keys/rotate`,
      headers,
      ...(payload ? { payload } : {}),
    });
  /** the error code of a receipt lookup (2000 for this unknown receipt = authenticated), or 200 */
  const basicCode = async (clientKey: string, secretKey: string) => {
    const res = await t.app.inject({
      method: 'GET',
      url: RECEIPT,
      headers: { authorization: basicAuthHeader(clientKey, secretKey) },
    });
    return res.statusCode === 200 ? 200 : (res.json().code as number);
  };
  const bearerCode = async (token: string) => {
    const res = await t.app.inject({ method: 'GET', url: RECEIPT, headers: { authorization: `Bearer ${token}` } });
    return res.json().code as number;
  };
  const issueToken = async (applicationId: string, privateKey: string) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v2/request/token',
      payload: { application_id: applicationId, private_key: privateKey },
    });
    return { status: res.statusCode, code: res.json().code as number | undefined, token: res.json().access_token as string };
  };

  async function withAdvancedClock<T>(ms: number, fn: () => Promise<T>): Promise<T> {
    t.clock.advance(ms);
    try {
      return await fn();
    } finally {
      t.clock.advance(-ms);
    }
  }

  it('returns new keys once; the old secret and private keys work for 24 h by default, then stop', async () => {
    const p: TestProject = await t.createProject();
    const res = await rotate(p.applicationId);
    expect(res.statusCode).toBe(200);
    const rotated = res.json() as Rotated;
    expect(Object.keys(rotated).sort()).toEqual([
      'application_id',
      'client_key',
      'previous_keys_expire_at',
      'private_key',
      'secret_key',
    ]);
    expect(rotated.client_key).toBe(p.clientKey);
    expect(rotated.secret_key).not.toBe(p.secretKey);
    expect(rotated.private_key).not.toBe(p.privateKey);
    const expiresAt = Date.parse(rotated.previous_keys_expire_at!);
    expect(Math.abs(expiresAt - (t.clock.now().getTime() + 24 * HOUR))).toBeLessThan(5_000);

    // within the grace period both old and new keys work (2000: authenticated, the receipt is unknown)
    expect(await basicCode(p.clientKey, p.secretKey)).toBe(2000);
    expect(await basicCode(p.clientKey, rotated.secret_key)).toBe(2000);
    expect((await issueToken(p.applicationId, p.privateKey)).status).toBe(200);
    expect((await issueToken(p.applicationId, rotated.private_key)).status).toBe(200);
    await withAdvancedClock(23 * HOUR, async () => {
      expect(await basicCode(p.clientKey, p.secretKey)).toBe(2000);
    });

    // after it only the new ones do
    await withAdvancedClock(24 * HOUR + 60_000, async () => {
      expect(await basicCode(p.clientKey, p.secretKey)).toBe(1204);
      expect((await issueToken(p.applicationId, p.privateKey)).code).toBe(1204);
      expect(await basicCode(p.clientKey, rotated.secret_key)).toBe(2000);
      expect((await issueToken(p.applicationId, rotated.private_key)).status).toBe(200);
    });

    // the admin view says until when the old keys work, and never shows a key
    const shown = await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${p.applicationId}`, headers: ADMIN });
    expect(shown.json().previous_keys_expire_at).toBe(rotated.previous_keys_expire_at);
    expect(shown.body).not.toContain(rotated.secret_key);
    expect(shown.body).not.toContain(rotated.private_key);
  });

  it('grace_hours sets the grace period; 0 stops the old keys at once', async () => {
    const p = await t.createProject();
    const two = (await rotate(p.applicationId, { grace_hours: 2 })).json() as Rotated;
    await withAdvancedClock(HOUR, async () => expect(await basicCode(p.clientKey, p.secretKey)).toBe(2000));
    await withAdvancedClock(2 * HOUR + 60_000, async () => expect(await basicCode(p.clientKey, p.secretKey)).toBe(1204));

    const now = await rotate(p.applicationId, { grace_hours: 0 });
    expect(now.statusCode).toBe(200);
    const third = now.json() as Rotated;
    expect(third.previous_keys_expire_at).toBeUndefined();
    expect(await basicCode(p.clientKey, two.secret_key)).toBe(1204);
    expect(await basicCode(p.clientKey, p.secretKey)).toBe(1204);
    expect((await issueToken(p.applicationId, two.private_key)).code).toBe(1204);
    expect(await basicCode(p.clientKey, third.secret_key)).toBe(2000);
  });

  it('revokes every access token of the project, and only of that project', async () => {
    const p = await t.createProject();
    const other = await t.createProject();
    const tokens = [
      (await issueToken(p.applicationId, p.privateKey)).token,
      (await issueToken(p.applicationId, p.privateKey)).token,
    ];
    const othersToken = (await issueToken(other.applicationId, other.privateKey)).token;
    for (const token of tokens) expect(await bearerCode(token)).toBe(2000);

    expect((await rotate(p.applicationId)).statusCode).toBe(200);
    for (const token of tokens) expect(await bearerCode(token)).toBe(9403);
    expect(await bearerCode(othersToken)).toBe(2000);
    const rows = await t.deps.database.db
      .selectFrom('access_tokens')
      .select('application_id')
      .where('application_id', '=', p.applicationId)
      .execute();
    expect(rows).toEqual([]);
  });

  it('needs the admin token, a known project and a sane grace period', async () => {
    const p = await t.createProject();
    const asProject = await rotate(p.applicationId, undefined, { authorization: p.basicAuth });
    expect(asProject.json()).toMatchObject({ error_code: 'ADMIN_UNAUTHORIZED', code: 9401 });
    expect((await rotate('ffffffffffffffffffffffff')).json()).toMatchObject({ error_code: 'PROJECT_NOT_FOUND', code: 9426 });
    for (const payload of [
      { grace_hours: -1 },
      { grace_hours: 1.5 },
      { grace_hours: 721 },
      { grace_hours: '24' },
      { other: 1 },
    ]) {
      const res = await rotate(p.applicationId, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json()).toMatchObject({ error_code: 'INVALID_REQUEST' });
    }
    // nothing changed: the original key is still the current one
    expect(await basicCode(p.clientKey, p.secretKey)).toBe(2000);
  });

  it('the new keys never reach the log', async () => {
    const p = await t.createProject();
    const rotated = (await rotate(p.applicationId, { grace_hours: 1 })).json() as Rotated;
    expect(t.logs()).toContain('project keys rotated');
    expect(t.logs()).not.toContain(rotated.secret_key);
    expect(t.logs()).not.toContain(rotated.private_key);
  });
});

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString();
    callback();
  }
}

describe('admin CLI: projects rotate-keys', () => {
  let t: TestApp;
  let url: string;
  beforeAll(async () => {
    t = await buildTestApp();
    url = await t.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function cli(argv: string[]) {
    const out = new Capture();
    const err = new Capture();
    const code = await runAdminCli(argv, { ADMIN_TOKEN: TEST_ADMIN_TOKEN, PAYGATE_URL: url }, out, err);
    return { code, out: out.text, err: err.text };
  }

  it('rotates over the admin API with --grace-hours', async () => {
    const p = await t.createProject();
    const res = await cli(['projects', 'rotate-keys', p.applicationId, '--grace-hours', '1']);
    expect(res.err).toBe('');
    expect(res.code).toBe(0);
    const rotated = JSON.parse(res.out) as Rotated;
    expect(rotated.application_id).toBe(p.applicationId);
    const expiresAt = Date.parse(rotated.previous_keys_expire_at!);
    expect(Math.abs(expiresAt - (t.clock.now().getTime() + HOUR))).toBeLessThan(5_000);
    const withNew = await t.app.inject({
      method: 'GET',
      url: RECEIPT,
      headers: { authorization: basicAuthHeader(p.clientKey, rotated.secret_key) },
    });
    expect(withNew.json().code).toBe(2000);
  });

  it('--direct rotates on the database itself', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'paygate-rotate-'));
    try {
      const env = { DATA_DIR: dataDir };
      const run = async (argv: string[]) => {
        const out = new Capture();
        const err = new Capture();
        const code = await runAdminCli(argv, env, out, err);
        return { code, out: out.text, err: err.text };
      };
      const created = JSON.parse((await run(['projects', 'create', '--direct', '--name', 'Direct'])).out);
      const res = await run(['projects', 'rotate-keys', created.application_id, '--direct', '--grace-hours', '2']);
      expect(res.err).toBe('');
      expect(res.code).toBe(0);
      const rotated = JSON.parse(res.out) as Rotated;
      expect(rotated.secret_key).not.toBe(created.secret_key);
      expect(rotated.private_key).not.toBe(created.private_key);
      // stored: the project now shows until when the old keys work
      const shown = JSON.parse((await run(['projects', 'get', created.application_id, '--direct'])).out);
      expect(shown.previous_keys_expire_at).toBe(rotated.previous_keys_expire_at);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('usage errors exit 2', async () => {
    for (const argv of [
      ['projects', 'rotate-keys'],
      ['projects', 'rotate-keys', 'ffffffffffffffffffffffff', '--grace-hours', 'soon'],
    ]) {
      const res = await cli(argv);
      expect(res.code, argv.join(' ')).toBe(2);
      expect(res.err).toContain('usage:');
    }
    const unknown = await cli(['projects', 'rotate-keys', 'ffffffffffffffffffffffff']);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.err)).toMatchObject({ error_code: 'PROJECT_NOT_FOUND' });
  });
});
