// Text input is UTF-8: a body, a form body, a path or a query whose bytes are not valid UTF-8 is 9400 before any
// parser decodes it (which would store U+FFFD in its place), and nothing is saved. Through the real app, injected
// and over a real socket (raw bytes in the request target).
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import { keyInClient } from '../payments/key-in-fixtures.js';

const BODY_MESSAGE = 'the request body is not valid UTF-8';
const TARGET_MESSAGE = 'the path or query is not valid UTF-8';

let t: TestApp;
let project: TestProject;
let billingKey: string;
beforeAll(async () => {
  t = await buildTestApp();
  project = await t.createProject();
  billingKey = await keyInClient(t, project).issuedKey();
});
afterAll(async () => {
  await t?.close();
});

/** A JSON body with `bytes` spliced into order_name's value. */
function chargeBytes(orderId: string, bytes: number[]): Buffer {
  const [head, tail] = JSON.stringify({
    billing_key: billingKey,
    order_id: orderId,
    price: 1000,
    order_name: 'June@@',
  }).split('@@') as [string, string];
  return Buffer.concat([Buffer.from(head), Buffer.from(bytes), Buffer.from(tail)]);
}

const receiptsOf = async (orderId: string) =>
  t.deps.database.db.selectFrom('receipts').select(['receipt_id', 'order_name']).where('order_id', '=', orderId).execute();

function expectInvalid(res: { statusCode: number; json(): unknown }, message: string): void {
  expect(res.statusCode).toBe(400);
  expect(res.json()).toMatchObject({ error_code: 'INVALID_REQUEST', code: 9400, payload: { message } });
}

describe('a body that is not UTF-8', () => {
  it.each([
    ['a lone continuation byte', [0x80]],
    ['0xFF', [0xff]],
    ['a cut sequence', [0xe2, 0x82]],
    ['an overlong /', [0xc0, 0xaf]],
    ['an encoded surrogate', [0xed, 0xa0, 0x80]],
  ])('%s in a JSON string -> 9400, no charge', async (_name, bytes) => {
    const orderId = `utf8-${bytes.join('-')}`;
    const res = await t.app.inject({
      method: 'POST',
      url: '/v2/subscribe/payment',
      headers: { authorization: project.basicAuth, 'content-type': 'application/json' },
      payload: chargeBytes(orderId, bytes),
    });
    expectInvalid(res, BODY_MESSAGE);
    expect(await receiptsOf(orderId)).toEqual([]);
  });

  it('valid multi-byte UTF-8 in the same place is charged and stored as sent', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v2/subscribe/payment',
      headers: { authorization: project.basicAuth, 'content-type': 'application/json' },
      payload: chargeBytes('utf8-ok', [...Buffer.from('월 €')]),
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(await receiptsOf('utf8-ok')).toMatchObject([{ order_name: 'June월 €' }]);
  });

  it('an admin body (the project name) -> 9400, no project created', async () => {
    const admin = { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const count = async () => (await t.app.inject({ url: '/admin/v1/projects', headers: admin })).json().count;
    const before = await count();
    const res = await t.app.inject({
      method: 'POST',
      url: '/admin/v1/projects',
      headers: admin,
      payload: Buffer.concat([Buffer.from('{"name":"Shop'), Buffer.from([0xfe]), Buffer.from('"}')]),
    });
    expectInvalid(res, BODY_MESSAGE);
    expect(await count()).toBe(before);
  });

  it('a form body whose percent-escapes are not UTF-8 -> 9400 (the dashboard sign-in)', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/dashboard/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'admin_token=%FF%FE&_csrf=x',
    });
    // the dashboard answers its errors as a page
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('9400');
    expect(res.body).toContain(BODY_MESSAGE);
  });
});

describe('a path or query that is not UTF-8', () => {
  it.each([
    ['/v2/receipt/0123456789abcdef01234567?x=%FF', TARGET_MESSAGE],
    ['/v2/receipt/0123456789abcdef01234567?x=%C3', TARGET_MESSAGE],
    ['/admin/v1/projects?page=1&q=%E2%82', TARGET_MESSAGE],
  ])('%s -> 9400', async (url, message) => {
    const res = await t.app.inject({ url, headers: { authorization: project.basicAuth } });
    expectInvalid(res, message);
  });

  it('a percent-encoded bad byte in the path -> 9400', async () => {
    const res = await t.app.inject({ url: '/v2/receipt/%FF%FE', headers: { authorization: project.basicAuth } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 9400 });
  });

  it('raw bytes in the request target, over a real socket -> 9400', async () => {
    const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const port = Number(new URL(address).port);
    const answer = await new Promise<string>((done, fail) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.write(
          Buffer.concat([
            Buffer.from('GET /v2/receipt/0123456789abcdef01234567?x='),
            Buffer.from([0xff, 0xfe]),
            Buffer.from(` HTTP/1.1\r\nHost: x\r\nAuthorization: ${project.basicAuth}\r\nConnection: close\r\n\r\n`),
          ]),
        );
      });
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString('latin1');
      });
      socket.on('end', () => done(text));
      socket.on('error', fail);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    expect(answer).toContain('"code":9400');
  });
});

describe('strings that are not Unicode text, and JSON that is not JSON', () => {
  const charge = (body: string) =>
    t.app.inject({
      method: 'POST',
      url: '/v2/subscribe/payment',
      headers: { authorization: project.basicAuth, 'content-type': 'application/json' },
      payload: body,
    });

  it.each([
    ['order_name', (o: Record<string, unknown>) => ({ ...o, order_name: 'x\ud800y' })],
    ['a metadata value', (o: Record<string, unknown>) => ({ ...o, metadata: { note: 'x\udfffy' } })],
    ['a metadata key', (o: Record<string, unknown>) => ({ ...o, metadata: { 'k\ud83d': 'v' } })],
  ])('a lone surrogate (a JSON escape) in %s -> 9400, nothing charged', async (_where, withSurrogate) => {
    const orderId = `surrogate-${_where.replace(/ /g, '-')}`;
    // JSON.stringify writes a lone surrogate as its \u escape: the text is valid UTF-8 and valid JSON
    const res = await charge(JSON.stringify(withSurrogate({ billing_key: billingKey, order_id: orderId, price: 1000 })));
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ code: 9400, payload: { message: expect.stringContaining('lone surrogate') } });
    expect(await receiptsOf(orderId)).toEqual([]);
  });

  it('a surrogate pair written as escapes is one character, stored as sent', async () => {
    const res = await charge(
      JSON.stringify({ billing_key: billingKey, order_id: 'pair-ok', price: 1000, order_name: '카드 💳' }).replace(
        '💳',
        '\\ud83d\\udcb3',
      ),
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(await receiptsOf('pair-ok')).toMatchObject([{ order_name: '카드 💳' }]);
  });

  it.each([
    ['{"price": 1000,}', 'at line 1, column 16 (character 16)'],
    ['{\n  "price": 1000\n  "order_id": "x"\n}', 'at line 3, column 3 (character 21)'],
    ['{"order_name": 4111111111111111x}', 'at line 1, column 32 (character 32)'],
    ['{"price": 10', 'ends early (line 1, column 13)'],
  ])('a JSON syntax error says where, never what: %j', async (body, where) => {
    const res = await charge(body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 9400, payload: { message: expect.stringContaining(where) } });
    expect(res.body).not.toContain('4111');
  });

  it('a prototype-poisoning key is refused as such', async () => {
    const res = await charge('{"__proto__": {"admin": true}, "price": 1000}');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 9400, payload: { message: expect.stringContaining('__proto__') } });
  });
});
