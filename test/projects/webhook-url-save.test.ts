// The project's webhook_url is checked when it is saved by the rule its deliveries connect under
// (src/webhooks/http-client.ts checkDestination): in production mode https only and every address the host resolves
// to global unicast, so loopback, link-local (cloud metadata) and a name the hosts file points at loopback are
// refused by the admin API with 3028 and nothing is saved; sandbox mode adds loopback (http too), nothing else.
import { readFileSync } from 'node:fs';
import ipaddr from 'ipaddr.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp } from '../helpers/app.js';

const ADMIN = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };
/** A global address written as one: no DNS needed to accept it. */
const PUBLIC_URL = 'https://93.184.216.34/hook';

/** A name of this machine's hosts file that points at loopback, other than localhost (`vm`, a host name), if any. */
function hostsFileLoopbackName(): string | undefined {
  let text = '';
  try {
    text = readFileSync('/etc/hosts', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    const [address, ...names] = line.replace(/#.*/, '').trim().split(/\s+/);
    if (!address || !ipaddr.isValid(address) || ipaddr.process(address).range() !== 'loopback') continue;
    const name = names.find((n) => n !== '' && !/(^|\.)localhost$/i.test(n) && !/^ip6-/.test(n));
    if (name) return name;
  }
  return undefined;
}

const REFUSED = [
  'https://127.0.0.1/',
  'https://[::1]/',
  'https://169.254.169.254/',
  'https://localhost/hook',
  ...(hostsFileLoopbackName() ? [`https://${hostsFileLoopbackName()}/hook`] : []),
];

describe('production mode: webhook_url refused at save', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ config: { sandbox: false, publicBaseUrl: 'https://pay.example.com' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const endpoints = () => t.deps.database.db.selectFrom('webhook_endpoints').selectAll().execute();
  const patch = (id: string, body: unknown) =>
    t.app.inject({ method: 'PATCH', url: `/admin/v1/projects/${id}`, headers: ADMIN, payload: body as object });

  it.each(REFUSED)('PATCH webhook_url %s -> 3028, the project and its endpoint unchanged', async (url) => {
    const project = await t.createProject();
    expect((await patch(project.applicationId, { webhook_url: PUBLIC_URL })).statusCode).toBe(200);
    const before = await endpoints();
    const res = await patch(project.applicationId, { webhook_url: url, name: 'renamed' });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ error_code: 'WEBHOOK_URL_INVALID', code: 3028 });
    expect(res.json().payload.message).toMatch(/^webhook_url: .*(blocked range|resolves to a refused address)/);
    const shown = await t.app.inject({ url: `/admin/v1/projects/${project.applicationId}`, headers: ADMIN });
    expect(shown.json()).toMatchObject({ name: 'test project', webhook_url: PUBLIC_URL });
    expect(await endpoints()).toEqual(before);
  });

  it('POST with such a webhook_url creates no project', async () => {
    const count = async () => (await t.app.inject({ url: '/admin/v1/projects', headers: ADMIN })).json().count as number;
    const before = await count();
    for (const url of REFUSED) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/admin/v1/projects',
        headers: ADMIN,
        payload: { name: 'hooked', webhook_url: url },
      });
      expect(res.json(), url).toMatchObject({ error_code: 'WEBHOOK_URL_INVALID', code: 3028 });
    }
    expect(await count()).toBe(before);
  });
});

describe('sandbox mode: loopback allowed, private still refused', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('accepts http://127.0.0.1 and https://localhost, refuses link-local and private addresses', async () => {
    const project = await t.createProject();
    const patch = (webhook_url: string) =>
      t.app.inject({
        method: 'PATCH',
        url: `/admin/v1/projects/${project.applicationId}`,
        headers: ADMIN,
        payload: { webhook_url },
      });
    expect((await patch('http://127.0.0.1:9/hook')).statusCode).toBe(200);
    expect((await patch('https://localhost/hook')).statusCode).toBe(200);
    for (const url of ['https://169.254.169.254/', 'https://10.0.0.1/hook', 'https://[fd00::1]/hook']) {
      expect((await patch(url)).json(), url).toMatchObject({ error_code: 'WEBHOOK_URL_INVALID', code: 3028 });
    }
  });
});
