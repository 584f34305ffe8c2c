// The error envelope: every failure is a catalog entry, Fastify's own errors included, and nothing
// internal reaches the client.
import { connect } from 'node:net';
import type { FastifyPluginAsync } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { z } from 'zod';
import { BODY_LIMIT_BYTES } from '../../src/api/app.js';
import { MAX_JSON_DEPTH } from '../../src/api/body-limits.js';
import { validate } from '../../src/platform/validation.js';
import { ApiError, errorCatalog, type ErrorName } from '../../src/platform/errors.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp } from '../helpers/app.js';
import { TEST_CARD } from '../payments/key-in-fixtures.js';

const INTERNAL_DETAIL = 'relation "secret_internal_table" does not exist';
const DB_PARAMETER = 'metadata-value-3f9a1c-must-not-be-logged';

const keyInLike = z.object({
  card_no: z
    .string()
    .trim()
    .min(1)
    .regex(/^\d{15,16}$/),
  card_expire_month: z
    .string()
    .trim()
    .min(1)
    .regex(/^(0[1-9]|1[0-2])$/),
  order_name: z.string().trim().min(1),
});
const keyInFieldErrors = {
  card_no: { blank: 'SUBSCRIBE_CARD_NO_BLANK' },
  card_expire_month: { blank: 'SUBSCRIBE_CARD_EX_MONTH_BLANK', invalid: 'RC_INVALID_EXP_MONTH' },
  order_name: { blank: 'RC_NAME_BLANK' },
} as const;

const probeRoutes: FastifyPluginAsync = async (app) => {
  app.get('/test/boom', { config: { auth: 'none' } }, async () => {
    throw new Error(INTERNAL_DETAIL);
  });
  // a statement that fails in the database after binding a value (as an insert of a metadata value would)
  app.get('/test/db-error', { config: { auth: 'none' } }, async () => {
    await sql`select ${DB_PARAMETER}::text as value, 1 / ${0}::int as boom`.execute(app.deps.database.db);
  });
  app.get('/test/pg-declined', { config: { auth: 'none' } }, async () => {
    throw new ApiError('SUBSCRIBE_PUBLISH_FAILED', { pgErrorCode: 'E051', payloadMessage: 'card refused by issuer' });
  });
  app.post('/test/validate', { config: { auth: 'none' } }, async (request) =>
    validate(keyInLike, request.body, keyInFieldErrors),
  );
  // the same rules declared as a route schema: Fastify's validation is mapped through config.fieldErrors
  app.post(
    '/test/schema',
    { config: { auth: 'none', fieldErrors: keyInFieldErrors }, schema: { body: keyInLike } },
    async (request) => request.body,
  );
};

function expectEnvelope(res: { statusCode: number; json(): unknown; body: string }, name: ErrorName): Record<string, unknown> {
  const body = res.json() as Record<string, unknown>;
  const entry = errorCatalog[name];
  expect(res.statusCode).toBe(entry.status);
  expect(body.error_code).toBe(name);
  expect(body.code).toBe(entry.code);
  expect(typeof body.message).toBe('string');
  for (const key of Object.keys(body)) expect(['error_code', 'code', 'message', 'pg_error_code', 'payload']).toContain(key);
  expect(res.body).not.toMatch(/stack|at .*\.ts:\d+|FST_/);
  return body;
}

describe('error envelope', () => {
  let t: TestApp;
  let basicAuth: string;
  beforeAll(async () => {
    t = await buildTestApp({ routes: probeRoutes });
    basicAuth = (await t.createProject()).basicAuth;
  });
  afterAll(async () => {
    await t?.close();
  });

  const post = (url: string, payload: string, contentType = 'application/json', headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'POST', url, payload, headers: { 'content-type': contentType, ...headers } });

  it('malformed JSON -> 400 INVALID_REQUEST', async () => {
    expectEnvelope(await post('/v2/request/token', '{"application_id": '), 'INVALID_REQUEST');
    expectEnvelope(
      await post('/admin/v1/projects', "{'single': 'quotes'}", 'application/json', {
        authorization: `Bearer ${TEST_ADMIN_TOKEN}`,
      }),
      'INVALID_REQUEST',
    );
  });

  it('a JSON array, string, number or null body -> 400 INVALID_REQUEST', async () => {
    for (const payload of ['[]', '[{"application_id":"a","private_key":"b"}]', '"text"', '42', 'null', 'true']) {
      const body = expectEnvelope(await post('/v2/request/token', payload), 'INVALID_REQUEST');
      expect(body.payload).toEqual({ message: 'the request body must be a JSON object' });
    }
  });

  it('prototype-poisoning JSON is refused', async () => {
    expectEnvelope(await post('/v2/request/token', '{"__proto__": {"admin": true}, "application_id": "x"}'), 'INVALID_REQUEST');
  });

  it('unknown content types -> 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    expectEnvelope(
      await post('/v2/request/token', 'application_id=a&private_key=b', 'application/x-www-form-urlencoded'),
      'UNSUPPORTED_MEDIA_TYPE',
    );
    expectEnvelope(await post('/v2/request/token', '{"application_id":"a"}', 'text/plain'), 'UNSUPPORTED_MEDIA_TYPE');
    expectEnvelope(await post('/v2/request/token', '<xml/>', 'application/xml'), 'UNSUPPORTED_MEDIA_TYPE');
    expectEnvelope(
      await post('/v2/subscribe/payment', '{}', 'multipart/form-data; boundary=x', { authorization: basicAuth }),
      'UNSUPPORTED_MEDIA_TYPE',
    );
  });

  it('a body over the limit (a 100 KB string) -> 413 PAYLOAD_TOO_LARGE', async () => {
    const huge = JSON.stringify({ application_id: 'a'.repeat(100 * 1024), private_key: 'b' });
    expect(huge.length).toBeGreaterThan(BODY_LIMIT_BYTES);
    expectEnvelope(await post('/v2/request/token', huge), 'PAYLOAD_TOO_LARGE');
    expectEnvelope(
      await post('/v2/subscribe/payment', huge, 'application/json', { authorization: basicAuth }),
      'PAYLOAD_TOO_LARGE',
    );
  });

  it('a long field under the body limit is a validation error, not a crash', async () => {
    const body = expectEnvelope(
      await post('/v2/request/token', JSON.stringify({ application_id: 'a'.repeat(30_000), private_key: 'b' })),
      'INVALID_REQUEST',
    );
    expect(JSON.stringify(body)).not.toContain('a'.repeat(100));
  });

  it('an empty JSON body counts as no body', async () => {
    const body = expectEnvelope(await post('/v2/request/token', ''), 'INVALID_REQUEST');
    expect((body.payload as { message: string }).message).toContain('application_id');
  });

  it('wrong field types -> 400 INVALID_REQUEST naming the field, not echoing the value', async () => {
    const body = expectEnvelope(
      await post('/v2/request/token', JSON.stringify({ application_id: 4111111111111111, private_key: ['x'] })),
      'INVALID_REQUEST',
    );
    expect((body.payload as { message: string }).message).toMatch(/application_id/);
    expect(JSON.stringify(body)).not.toContain('4111111111111111');
  });

  it('unknown route -> 404 NOT_FOUND, with or without credentials', async () => {
    expectEnvelope(await t.app.inject({ method: 'GET', url: '/v2/nope' }), 'NOT_FOUND');
    expectEnvelope(await t.app.inject({ method: 'DELETE', url: '/health' }), 'NOT_FOUND');
    expectEnvelope(await t.app.inject({ method: 'GET', url: '/v2/nope', headers: { authorization: basicAuth } }), 'NOT_FOUND');
  });

  it('a malformed URL encoding or an over-long path parameter -> INVALID_REQUEST from the router', async () => {
    expectEnvelope(
      await t.app.inject({ method: 'GET', url: '/v2/receipt/%E0%A4%A', headers: { authorization: basicAuth } }),
      'INVALID_REQUEST',
    );
    const longParam = await t.app.inject({
      method: 'GET',
      url: `/v2/receipt/${'a'.repeat(5000)}`,
      headers: { authorization: basicAuth },
    });
    expect(longParam.statusCode).toBeGreaterThanOrEqual(400);
    expect(longParam.statusCode).toBeLessThan(500);
    expect(longParam.json()).toHaveProperty('error_code');
  });

  it('NUL characters in path, query or body -> INVALID_REQUEST before reaching the database', async () => {
    const inPath = await t.app.inject({ method: 'GET', url: '/v2/receipt/%00', headers: { authorization: basicAuth } });
    expect(expectEnvelope(inPath, 'INVALID_REQUEST').payload).toEqual({ message: 'path: NUL characters are not allowed' });
    const inQuery = await t.app.inject({
      method: 'GET',
      url: '/v2/receipt/abc?lookup_user_data=%00',
      headers: { authorization: basicAuth },
    });
    expect(expectEnvelope(inQuery, 'INVALID_REQUEST').payload).toEqual({ message: 'query: NUL characters are not allowed' });
    const inBody = await post('/v2/request/token', JSON.stringify({ application_id: 'a\u0000b', private_key: 'x' }));
    expect(expectEnvelope(inBody, 'INVALID_REQUEST').payload).toEqual({ message: 'body: NUL characters are not allowed' });
    const inKey = await post('/v2/request/token', JSON.stringify({ nested: { 'k\u0000': 1 } }));
    expectEnvelope(inKey, 'INVALID_REQUEST');
  });

  describe('over-deep JSON is refused at parse time, with or without an Idempotency-Key (never a 500)', () => {
    const nested = (depth: number, leaf: string) => `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}`;
    // a real billing key, so a body that got past the checks would reach the database
    let billingKey = '';
    beforeAll(async () => {
      const issued = await post('/v2/request/subscribe', JSON.stringify(TEST_CARD), 'application/json', {
        authorization: basicAuth,
      });
      billingKey = (issued.json() as { billing_key: string }).billing_key;
      expect(billingKey).toMatch(/^[0-9a-f]{24}$/);
    });
    let orderSeq = 0;
    const charge = (metadataValue: string) =>
      `{"billing_key":"${billingKey}","order_name":"n","order_id":"deep-${++orderSeq}","price":100,"metadata":{"m":${metadataValue}}}`;

    it('a 30,000-deep array -> 400 INVALID_REQUEST naming the limit', async () => {
      const withAndWithoutKey: Record<string, string>[] = [
        { authorization: basicAuth },
        { authorization: basicAuth, 'idempotency-key': 'deep-1' },
      ];
      for (const headers of withAndWithoutKey) {
        const res = await post('/v2/subscribe/payment', charge(nested(30_000, '0')), 'application/json', headers);
        expect(expectEnvelope(res, 'INVALID_REQUEST').payload).toEqual({
          message: `the JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`,
        });
      }
      // a top-level deep array too, and on a route without an Idempotency-Key hook
      expectEnvelope(await post('/v2/request/token', nested(30_000, '0')), 'INVALID_REQUEST');
    });

    it('a NUL at depth 71 -> 400 INVALID_REQUEST, not a database error', async () => {
      const res = await post('/v2/subscribe/payment', charge(nested(69, '"a\\u0000b"')), 'application/json', {
        authorization: basicAuth,
        'idempotency-key': 'deep-nul-71',
      });
      expectEnvelope(res, 'INVALID_REQUEST');
    });

    it('exactly at the limit the body is parsed, and a NUL at its deepest string is still found', async () => {
      // the body object is level 1 and metadata level 2: 30 more arrays reach the limit
      const atLimit = await post('/v2/subscribe/payment', charge(nested(MAX_JSON_DEPTH - 2, '"a\\u0000b"')), 'application/json', {
        authorization: basicAuth,
        'idempotency-key': 'deep-nul-limit',
      });
      expect(expectEnvelope(atLimit, 'INVALID_REQUEST').payload).toEqual({ message: 'body: NUL characters are not allowed' });
      const overLimit = await post('/v2/subscribe/payment', charge(nested(MAX_JSON_DEPTH - 1, '0')), 'application/json', {
        authorization: basicAuth,
      });
      expect(expectEnvelope(overLimit, 'INVALID_REQUEST').payload).toEqual({
        message: `the JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`,
      });
    });

    it('brackets inside strings do not count as nesting', async () => {
      const res = await post('/v2/request/token', JSON.stringify({ application_id: '['.repeat(1000), private_key: '{"\\' }));
      expect(expectEnvelope(res, 'INVALID_REQUEST').payload).not.toEqual({
        message: `the JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`,
      });
    });
  });

  it('an unexpected error -> 500 INTERNAL_ERROR without the internal message; it is logged', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/test/boom' });
    const body = expectEnvelope(res, 'INTERNAL_ERROR');
    expect(body.message).toBe(errorCatalog.INTERNAL_ERROR.message);
    expect(res.body).not.toContain('secret_internal_table');
    expect(t.logs()).toContain('secret_internal_table');
  });

  it('a database error is logged with its code and message but without the query or its parameters', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/test/db-error' });
    expectEnvelope(res, 'INTERNAL_ERROR');
    const line = t
      .logs()
      .split('\n')
      .find((l) => l.includes('division by zero'));
    expect(line).toBeDefined();
    const logged = JSON.parse(line ?? '{}') as { err?: Record<string, unknown> };
    expect(logged.err?.code).toBe('22012');
    expect(logged.err).not.toHaveProperty('query');
    expect(logged.err).not.toHaveProperty('params');
    expect(t.logs()).not.toContain(DB_PARAMETER);
    expect(t.logs()).not.toContain('as boom');
  });

  it('pg_error_code and payload.message are rendered when present', async () => {
    const body = expectEnvelope(await t.app.inject({ method: 'GET', url: '/test/pg-declined' }), 'SUBSCRIBE_PUBLISH_FAILED');
    expect(body).toEqual({
      error_code: 'SUBSCRIBE_PUBLISH_FAILED',
      code: 2304,
      message: errorCatalog.SUBSCRIBE_PUBLISH_FAILED.message,
      pg_error_code: 'E051',
      payload: { message: 'card refused by issuer' },
    });
  });

  it('a database failure -> 500 INTERNAL_ERROR with no driver detail', async () => {
    const broken = await buildTestApp();
    try {
      await broken.deps.database.close();
      const res = await broken.app.inject({
        method: 'POST',
        url: '/admin/v1/projects',
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
        payload: { name: 'x' },
      });
      expectEnvelope(res, 'INTERNAL_ERROR');
      expect(res.body).not.toMatch(/driver|destroy|kysely|pglite|pool/i);
    } finally {
      await broken.close();
    }
  });

  describe.each([
    ['validate() in the handler', '/test/validate'],
    ['a route schema with config.fieldErrors', '/test/schema'],
  ])('validation mapping through %s', (_label, url) => {
    const valid = { card_no: '4111111111111111', card_expire_month: '12', order_name: 'plan' };
    const send = (body: unknown) => post(url, JSON.stringify(body));

    it('passes a valid body through', async () => {
      const res = await send(valid);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual(valid);
    });

    it('blank (missing, null, empty, whitespace) -> the field blank code', async () => {
      for (const cardNo of [undefined, null, '', '   ']) {
        expectEnvelope(await send({ ...valid, card_no: cardNo }), 'SUBSCRIBE_CARD_NO_BLANK');
      }
      expectEnvelope(await send({ ...valid, order_name: '' }), 'RC_NAME_BLANK');
    });

    it('invalid -> the field invalid code (expiry month 13 -> 2084)', async () => {
      expectEnvelope(await send({ ...valid, card_expire_month: '13' }), 'RC_INVALID_EXP_MONTH');
      expectEnvelope(await send({ ...valid, card_expire_month: '00' }), 'RC_INVALID_EXP_MONTH');
      expectEnvelope(await send({ ...valid, card_expire_month: '' }), 'SUBSCRIBE_CARD_EX_MONTH_BLANK');
    });

    it('fields are checked in the declared order', async () => {
      expectEnvelope(await send({ card_expire_month: '13' }), 'SUBSCRIBE_CARD_NO_BLANK');
      expectEnvelope(await send({ card_no: '4111111111111111', card_expire_month: '13' }), 'RC_INVALID_EXP_MONTH');
    });

    it('the card number never appears in the error', async () => {
      const res = await send({ ...valid, card_no: '41111111111111112222' });
      expectEnvelope(res, 'SUBSCRIBE_CARD_NO_BLANK');
      expect(res.body).not.toContain('41111111111111112222');
    });
  });
});

/** Sends raw bytes to a listening server and returns everything it answers before closing. */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let answer = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('no answer within 10 s'));
    }, 10_000);
    socket.on('data', (d: Buffer) => (answer += d.toString()));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
    socket.on('error', () => undefined);
  });
}

describe('HTTP that never becomes a request', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await buildTestApp();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('an unparsable request line gets the catalog envelope and the connection is closed', async () => {
    const answer = await rawExchange(port, 'THIS IS NOT HTTP\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(body).toEqual({ error_code: 'INVALID_REQUEST', code: 9400, message: errorCatalog.INVALID_REQUEST.message });
  });

  it('oversized headers get HEADERS_TOO_LARGE', async () => {
    const answer = await rawExchange(port, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({
      error_code: 'HEADERS_TOO_LARGE',
      code: 9431,
    });
  });

  it('a well-formed request on the same server still works', async () => {
    const answer = await rawExchange(port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('{"status":"ok"}');
  });
});

describe('catalog', () => {
  // every code the spec names (key-in, identity verification, escrow, messaging, authentication)
  const specCodes: Record<number, string> = {
    600: 'API_ONLY_SELLER',
    1203: 'APP_FIREWALL_BLOCKED',
    1204: 'APP_SK_NOT_MATCHED',
    1205: 'APP_AT_AUTHORIZE_TYPE_INVALID',
    1206: 'APP_AT_AUTHORIZE_HEADER_BLANK',
    1216: 'APP_CLIENT_KEY_NOT_FOUND',
    1218: 'APP_CLIENT_KEY_EXPIRED',
    1221: 'API_ROLE_NOT_SUPPORT',
    1222: 'API_SCOPE_INVALID',
    1224: 'APP_KEY_CHAIN_EXPIRED',
    1225: 'APP_KEY_CHAIN_SESSION_INVALID',
    2000: 'RC_NOT_FOUND',
    2001: 'RC_PG_NOT_FOUND',
    2002: 'RC_PM_NOT_FOUND',
    2003: 'RC_NAME_BLANK',
    2005: 'RC_O_ID_BLANK',
    2017: 'RC_RESOURCE_NOT_CONFIG',
    2057: 'RC_NOT_SUBSCRIBE',
    2058: 'RC_ONLY_REST_API',
    2064: 'RC_NOT_AUTH',
    2069: 'RC_NOT_CONFIRMED',
    2084: 'RC_INVALID_EXP_MONTH',
    2300: 'SUBSCRIBE_NEED_PG_METHOD',
    2301: 'SUBSCRIBE_REQUEST_FAILED',
    2304: 'SUBSCRIBE_PUBLISH_FAILED',
    2309: 'SUBSCRIBE_BK_NOT_FOUND',
    2311: 'SUBSCRIBE_CARD_NO_BLANK',
    2312: 'SUBSCRIBE_CARD_PW_BLANK',
    2313: 'SUBSCRIBE_CARD_IDENTITY_BLANK',
    2314: 'SUBSCRIBE_CARD_EX_YEAR_BLANK',
    2315: 'SUBSCRIBE_CARD_EX_MONTH_BLANK',
    2400: 'AUTH_NEED_PG_METHOD',
    2401: 'AUTH_REQUEST_FAILED',
    2402: 'AUTH_CONFIRM_READY_FAILED',
    2404: 'AUTH_NOT_READY',
    2405: 'AUTH_CONFIRM_FAILED',
    2406: 'AUTH_CONFIRM_METHOD_NOT_FOUND',
    2407: 'AUTH_NOT_FOUND',
    2408: 'AUTH_NOT_CONFIRMED',
    2409: 'AUTH_EXPIRED',
    2411: 'AUTH_REALARM_FAILED',
    2412: 'AUTH_REALARM_NOT_ABLE',
    2700: 'RC_ESCROW_NOT_READY',
    2701: 'RC_ESCROW_SHIPPING_START_FAILED',
    2702: 'RC_ESCROW_SHIPPING_NO_METHOD',
    2703: 'RC_NOT_ESCROW',
    2706: 'RC_TRACKING_NUMBER_BLANK',
    2707: 'RC_DELIVERY_CORP_BLANK',
    2708: 'RC_PROVIDER_NAME_BLANK',
    2709: 'RC_PROVIDER_ADDR1_BLANK',
    2710: 'RC_PROVIDER_ADDR2_BLANK',
    2711: 'RC_PROVIDER_ZIP_BLANK',
    2712: 'RC_PROVIDER_PHONE_BLANK',
    2713: 'RC_USER_NAME_BLANK',
    2714: 'RC_USER_PHONE_BLANK',
    2715: 'RC_USER_ADDRESS_BLANK',
    2716: 'RC_USER_ZIPCODE_BLANK',
    3028: 'WEBHOOK_URL_INVALID',
    3029: 'WEBHOOK_NOT_CONFIGURED',
  };

  it('holds every spec code under its spec name', () => {
    for (const [code, name] of Object.entries(specCodes)) {
      expect(errorCatalog[name as ErrorName]?.code, name).toBe(Number(code));
    }
  });

  it('gives the HTTP statuses the spec states', () => {
    expect(errorCatalog.AUTH_CONFIRM_FAILED.status).toBe(500);
    expect(errorCatalog.AUTH_CONFIRM_METHOD_NOT_FOUND.status).toBe(404);
    expect(errorCatalog.AUTH_REALARM_FAILED.status).toBe(500);
    expect(errorCatalog.RC_ESCROW_SHIPPING_NO_METHOD.status).toBe(404);
    expect(errorCatalog.RC_ESCROW_SHIPPING_START_FAILED.status).toBe(500);
    expect(errorCatalog.API_SCOPE_INVALID.status).toBe(401);
  });

  it('numbers are unique, paygate codes stay outside the spec ranges, statuses are errors', () => {
    const entries = Object.entries(errorCatalog);
    expect(new Set(entries.map(([, e]) => e.code)).size).toBe(entries.length);
    const specNames = new Set(Object.values(specCodes));
    for (const [name, entry] of entries) {
      expect(entry.status).toBeGreaterThanOrEqual(400);
      expect(entry.status).toBeLessThan(600);
      expect(entry.message.length).toBeGreaterThan(0);
      if (!specNames.has(name)) expect(entry.code, name).toBeGreaterThanOrEqual(9000);
    }
  });

  it('ApiError takes the catalog entry by name and overrides only the message', () => {
    const err = new ApiError('SUBSCRIBE_PUBLISH_FAILED', { message: 'refused: stolen card', pgErrorCode: 'E1' });
    expect(err.statusCode).toBe(errorCatalog.SUBSCRIBE_PUBLISH_FAILED.status);
    expect(err.toBody()).toEqual({
      error_code: 'SUBSCRIBE_PUBLISH_FAILED',
      code: 2304,
      message: 'refused: stolen card',
      pg_error_code: 'E1',
    });
  });
});
