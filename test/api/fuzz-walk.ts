// Property-based fuzzing of EVERY route of the app (enumerated from the router itself, so a new
// route is fuzzed without touching this file): >= 1,000 generated requests per endpoint with valid
// credentials plus 250 without. Malformed JSON, arrays, scalars, wrong types, missing fields, huge
// strings, unknown content types, odd path parameters. Never a 5xx; every error body is a catalog
// entry; a refused mutating request changes no row of any table.
// The walk is one of the suite's longest: the files test/api/fuzz-<n>.test.ts each walk every FUZZ_PARTS-th route
// (fuzzWalk(n)) with an app and a database of their own, so that the runner runs the parts side by side.
import { existsSync } from 'node:fs';
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCS_PREFIX } from '../../src/api/docs/openapi.js';
import { errorCatalog, type ErrorName } from '../../src/platform/errors.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import { TEST_CARD } from '../payments/key-in-fixtures.js';
import { concretePath, type Endpoint, endpointsOf } from './route-list.js';

// CI runs the walk on both storage engines. The full walk (the numbers in the header) runs once, on the real
// Postgres server (CI's DATABASE_URL pass): it is what production stores into, and the walk reaches storage (a
// success writes rows, every refusal is checked against a digest of every table, NUL characters once got as far
// as Postgres). On PGlite (`npm test`) a fifth of the walk runs: every route still gets hundreds of generated
// requests, the same generators and the same checks. FUZZ_FULL=1 asks for the full walk on PGlite too.
const FULL_WALK = process.env.DATABASE_URL !== undefined || process.env.FUZZ_FULL === '1';
const WALK_SHARE = FULL_WALK ? 1 : 1 / 5;
const RUNS_WITH_AUTH = Math.round(1_000 * WALK_SHARE);
const RUNS_WITHOUT_AUTH = Math.round(250 * WALK_SHARE);
const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

// Field names every route reads, so generated objects reach past "field missing" into type and range checks.
const KNOWN_FIELDS = [
  ...Object.keys(TEST_CARD),
  'billing_key',
  'order_id',
  'price',
  'tax_free',
  'card_quota',
  'card_interest',
  'metadata',
  'items',
  'user',
  'extra',
  'receipt_id',
  'cancel_price',
  'cancel_tax_free',
  'cancel_id',
  'cancel_username',
  'cancel_message',
  'refund',
  'application_id',
  'private_key',
  'name',
  'seller',
  'scopes',
  'allowed_ips',
  'api_version',
  'webhook_url',
  'merchant',
  'key_expires_at',
  'pgs',
  'username',
  'phone',
  'identity_no',
  'carrier',
  'authenticate_type',
  'otp',
  'site_url',
  'tracking_number',
  'delivery_corp',
  'url',
  'events',
  'enabled',
  'retry_count',
  'page',
  'limit',
];

const hugeString = fc.integer({ min: 20_000, max: 110_000 }).map((n) => 'x'.repeat(n));
const oddString = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  '카드자동(REST)',
  '13',
  '00',
  '-1',
  '4111111111111111',
  '💳',
  '<script>',
  "' or 1=1 --",
);
const leafValue = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 2, arbitrary: oddString },
  { weight: 1, arbitrary: hugeString },
  { weight: 1, arbitrary: fc.constantFrom(null, 0, -1, 1.5, 1e308, Number.MAX_SAFE_INTEGER + 2, true, [], {}) },
);
const fieldObject = fc.dictionary(fc.oneof(fc.constantFrom(...KNOWN_FIELDS), fc.string({ maxLength: 8 })), leafValue, {
  maxKeys: 12,
});
/** a nearly valid key-in body with a few fields replaced */
const nearlyValid = fc
  .tuple(
    fc.constantFrom<Record<string, unknown>>(
      TEST_CARD,
      { billing_key: 'x', order_name: 'n', order_id: 'o', price: 100 },
      { receipt_id: 'r' },
    ),
    fieldObject,
  )
  .map(([base, overrides]) => ({ ...base, ...overrides }));

interface GeneratedRequest {
  readonly contentType: string | undefined;
  readonly payload: string | undefined;
  readonly param: string;
  readonly query: string;
}

const requestArb: fc.Arbitrary<GeneratedRequest> = fc
  .record({
    ...{
      body: fc.oneof(
        { weight: 4, arbitrary: fieldObject.map((o) => ({ contentType: 'application/json', payload: JSON.stringify(o) })) },
        { weight: 3, arbitrary: nearlyValid.map((o) => ({ contentType: 'application/json', payload: JSON.stringify(o) })) },
        { weight: 2, arbitrary: fc.jsonValue().map((v) => ({ contentType: 'application/json', payload: JSON.stringify(v) })) },
        { weight: 2, arbitrary: fc.string({ maxLength: 60 }).map((s) => ({ contentType: 'application/json', payload: s })) },
        {
          weight: 1,
          arbitrary: fc
            .tuple(
              fc.constantFrom(
                'text/plain',
                'application/xml',
                'application/x-www-form-urlencoded',
                'multipart/form-data; boundary=x',
                'application/octet-stream',
                'application/json; charset=utf-16',
                'garbage',
              ),
              fc.string({ maxLength: 60 }),
            )
            .map(([contentType, payload]) => ({ contentType, payload })),
        },
        { weight: 1, arbitrary: fc.constant({ contentType: undefined, payload: undefined }) },
      ),
    },
    param: fc.oneof(
      fc
        .string({ maxLength: 40 })
        .filter((s) => s.length > 0)
        .map(encodeURIComponent),
      fc.constantFrom('000000000000000000000000', 'x'.repeat(300), '%', '%00', '..%2F..', 'a%20b'),
    ),
    query: fc.oneof(
      fc.constant(''),
      fc
        .dictionary(fc.constantFrom('page', 'limit', 'lookup_user_data', 'x'), fc.string({ maxLength: 20 }), { maxKeys: 3 })
        .map((q) => `?${new URLSearchParams(q).toString()}`),
    ),
  })
  .map(({ body, param, query }) => ({ ...body, param, query }));

/** How many files the walk is split into (test/api/fuzz-1.test.ts ... fuzz-<FUZZ_PARTS>.test.ts). */
export const FUZZ_PARTS = 3;

/** Part `part` (1..FUZZ_PARTS) of the walk: every FUZZ_PARTS-th route, the route census in part 1. */
export async function fuzzWalk(part: number): Promise<void> {
  // Built at load time so that each endpoint gets its own test (and its own timeout).
  const t: TestApp = await buildTestApp({ env: { LOG_LEVEL: 'warn' } });
  const project: TestProject = await t.createProject();
  // the API reference's page, script and document copies take no input: /docs/js/scalar.js alone answers 4 MB a
  // request, and hundreds of fuzzed runs of it exhausted the worker's heap
  const allEndpoints: Endpoint[] = endpointsOf(t.app).filter(
    (e) => e.path !== DOCS_PREFIX && !e.path.startsWith(`${DOCS_PREFIX}/`),
  );
  // this part's routes: every FUZZ_PARTS-th in the router's order
  const endpoints = allEndpoints.filter((_, i) => i % FUZZ_PARTS === part - 1);
  let stateQuery: ReturnType<typeof sql<{ state: string }>>;

  /** The dashboard answers a browser: its refusals are HTML pages, not the API's JSON envelope. */
  const isPage = (path: string) => path === '/dashboard' || path.startsWith('/dashboard/');

  /**
   * A refusal is a catalog error in the JSON envelope; a dashboard page may instead answer an HTML error page (its
   * validation, before the page runs, answers the envelope too).
   */
  function expectRefusal(path: string, res: { headers: Record<string, unknown>; json(): unknown }, context: string): void {
    if (isPage(path) && /^text\/html/.test(String(res.headers['content-type']))) return;
    const body = res.json() as { error_code?: string; code?: number; message?: string };
    expect(body.error_code, context).toEqual(expect.any(String));
    expect(body.code, context).toBe(errorCatalog[body.error_code as ErrorName]?.code);
    expect(body.message, context).toEqual(expect.any(String));
  }

  /** A digest of every row of every table: equal digests mean nothing changed. */
  async function databaseState(): Promise<string> {
    const result = await stateQuery.execute(t.deps.database.db);
    return result.rows[0]?.state ?? '';
  }

  beforeAll(async () => {
    const tables = await sql<{ table_name: string }>`
      select table_name from information_schema.tables
      where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name`.execute(t.deps.database.db);
    const digests = tables.rows.map(
      ({ table_name }) =>
        sql`(select coalesce(md5(string_agg(r::text, ',' order by r::text)), '') from ${sql.table(table_name)} r)`,
    );
    stateQuery = sql<{ state: string }>`select concat_ws('|', ${sql.join(digests)}) as state`;
  });
  afterAll(async () => {
    await t?.close();
  });

  function authHeader(mode: 'valid' | 'none', path: string): Record<string, string> {
    if (mode === 'none') return {};
    return { authorization: path.startsWith('/admin/') ? `Bearer ${TEST_ADMIN_TOKEN}` : project.basicAuth };
  }

  async function fuzz(endpoint: Endpoint, mode: 'valid' | 'none', numRuns: number): Promise<void> {
    const mutating = MUTATING.has(endpoint.method);
    // the state after the last request: a refusal must leave it as it is, a success may move it on
    let known = mutating ? await databaseState() : '';
    await fc.assert(
      fc.asyncProperty(requestArb, async (generated) => {
        const headers: Record<string, string> = authHeader(mode, endpoint.path);
        if (generated.contentType !== undefined) headers['content-type'] = generated.contentType;
        const res = await t.app.inject({
          method: endpoint.method as 'GET',
          url: concretePath(endpoint.path, generated.param) + generated.query,
          headers,
          ...(generated.payload === undefined ? {} : { payload: generated.payload }),
        });
        const context = `${endpoint.method} ${endpoint.path} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
        expect(res.statusCode, context).toBeLessThan(500);
        if (res.statusCode >= 400) {
          expectRefusal(endpoint.path, res, context);
          if (mutating) expect(await databaseState(), context).toBe(known);
        } else if (mutating) {
          known = await databaseState();
        }
      }),
      { numRuns },
    );
  }

  describe('fuzzing every endpoint', () => {
    if (part === 1) {
      it('finds every route of the app, including the platform and billing ones', () => {
        const names = allEndpoints.map((e) => `${e.method} ${e.path}`);
        expect(names).toEqual(
          expect.arrayContaining([
            'GET /health',
            'POST /v2/request/token',
            'POST /admin/v1/projects',
            'PATCH /admin/v1/projects/:application_id',
            'POST /v2/request/subscribe',
            'POST /v2/subscribe/payment',
            'GET /v2/receipt/:receipt_id',
            'POST /v2/cancel',
            'GET /v2/billing_key/:billing_key',
            'DELETE /v2/subscribe/billing_key/:receipt_id|:billing_key',
          ]),
        );
        // every documented path is among the router's
        const documented = Object.entries((t.app.swagger() as { paths: Record<string, Record<string, unknown>> }).paths).flatMap(
          ([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ':$1')}`),
        );
        // every route is walked: each part has its file
        for (let n = 1; n <= FUZZ_PARTS; n++) {
          expect(existsSync(new URL(`./fuzz-${n}.test.ts`, import.meta.url)), `test/api/fuzz-${n}.test.ts`).toBe(true);
        }
        const routed = new Set(allEndpoints.map((e) => `${e.method} ${e.path.replace(/:[A-Za-z_]+\|/g, '')}`));
        for (const op of documented) {
          const alternatives = allEndpoints.some(
            (e) => e.method === op.split(' ')[0] && concretePath(e.path, 'P') === concretePath(op.split(' ')[1]!, 'P'),
          );
          expect(alternatives || routed.has(op), op).toBe(true);
        }
      });
    }

    it.each(endpoints.map((e) => [`${e.method} ${e.path}`, e] as const))(
      '%s: never a 5xx, always a catalog error, refusals change nothing',
      async (_name, endpoint) => {
        await fuzz(endpoint, 'valid', RUNS_WITH_AUTH);
        await fuzz(endpoint, 'none', RUNS_WITHOUT_AUTH);
      },
      180_000,
    );
  });

  // Hostile JSON: nesting far past the depth limit (30,000 levels blew the stack of the Idempotency-Key
  // fingerprint), NUL characters at every depth (one at depth 71 once reached Postgres), huge arrays, at
  // every route, without an Idempotency-Key, with a fresh one and with one reused across bodies.
  const HOSTILE_RUNS = Math.round(40 * WALK_SHARE);
  const IDEMPOTENCY_MODES = ['none', 'fresh', 'reused'] as const;
  const NUL_LEAVES = ['\u0000', 'a\u0000b', '\u0000'.repeat(64), 'order-\u0000\u202e'].map((s) => JSON.stringify(s));
  const nest = (depth: number, leaf: string, kind: 'array' | 'object') =>
    kind === 'array' ? `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}${leaf}${'}'.repeat(depth)}`;
  const hugeArray = (n: number, item: string) => `[${Array.from({ length: n }, () => item).join(',')}]`;
  const chargeBase = (billingKey: string) => ({ billing_key: billingKey, order_name: 'n', order_id: 'hostile', price: 100 });

  /** A JSON text: a (nearly valid) body with one field replaced by a deep, NUL-laden or huge value, or that value alone. */
  const hostileText = (bases: readonly Record<string, unknown>[]) =>
    fc
      .record({
        depth: fc.oneof(
          fc.integer({ min: 0, max: 34 }),
          fc.integer({ min: 60, max: 80 }),
          fc.constantFrom(1_000, 10_000, 30_000),
        ),
        kind: fc.constantFrom<'array' | 'object'>('array', 'object'),
        leaf: fc.oneof(
          fc.constantFrom(...NUL_LEAVES),
          fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
        ),
        huge: fc.option(fc.constantFrom(hugeArray(30_000, '0'), hugeArray(7_000, '"\\u0000"'), hugeArray(3_000, '{}'))),
        field: fc.option(fc.constantFrom('metadata', 'extra', 'items', 'user', 'refund', ...KNOWN_FIELDS)),
        base: fc.constantFrom(...bases),
      })
      .map(({ depth, kind, leaf, huge, field, base }) => {
        const value = nest(depth, huge ?? leaf, kind);
        if (field === null) return value;
        const prefix = JSON.stringify({ ...base, [field]: 0 });
        // put the raw value text where the placeholder 0 is: no JSON.stringify of a 30,000-deep value
        return prefix.replace(`${JSON.stringify(field)}:0`, `${JSON.stringify(field)}:${value}`);
      });

  describe('deep, NUL-laden and huge JSON at every endpoint', () => {
    let bases: Record<string, unknown>[] = [];
    beforeAll(async () => {
      const issued = await t.app.inject({
        method: 'POST',
        url: '/v2/request/subscribe',
        headers: { authorization: project.basicAuth },
        payload: { ...TEST_CARD, subscription_id: 'hostile' },
      });
      const billingKey = (issued.json() as { billing_key: string }).billing_key;
      bases = [TEST_CARD, chargeBase(billingKey), { receipt_id: '000000000000000000000000' }, { name: 'p' }, {}];
    });

    /** The cases of the security review, then generated ones. */
    const fixedCases = (): string[] => [
      nest(30_000, '0', 'array'),
      JSON.stringify({ ...chargeBase('000000000000000000000000'), metadata: { m: 0 } }).replace(
        '"m":0',
        `"m":${nest(69, JSON.stringify('a\u0000b'), 'array')}`,
      ),
      JSON.stringify({ metadata: 0 }).replace(':0', `:${nest(30, NUL_LEAVES[1]!, 'object')}`),
      hugeArray(30_000, '0'),
      JSON.stringify({ items: 0 }).replace(':0', `:${hugeArray(7_000, '"\\u0000"')}`),
    ];

    it.each(endpoints.map((e) => [`${e.method} ${e.path}`, e] as const))(
      '%s: never a 5xx, always a catalog error',
      async (_name, endpoint) => {
        let seq = 0;
        const send = async (text: string, mode: (typeof IDEMPOTENCY_MODES)[number]) => {
          seq += 1;
          const headers: Record<string, string> = { ...authHeader('valid', endpoint.path), 'content-type': 'application/json' };
          if (mode === 'fresh') headers['idempotency-key'] = `hostile-${endpoint.method}-${endpoint.path}-${seq}`;
          if (mode === 'reused') headers['idempotency-key'] = `hostile-${endpoint.method}-${endpoint.path}`;
          const res = await t.app.inject({
            method: endpoint.method as 'POST',
            url: concretePath(endpoint.path, seq % 2 === 0 ? '%00%E2%80%AE' : '000000000000000000000000'),
            headers,
            payload: text,
          });
          const context = `${endpoint.method} ${endpoint.path} [${mode}] ${text.slice(0, 120)} -> ${res.statusCode} ${res.body.slice(0, 200)}`;
          expect(res.statusCode, context).toBeLessThan(500);
          if (res.statusCode >= 400) expectRefusal(endpoint.path, res, context);
        };
        for (const text of fixedCases()) for (const mode of IDEMPOTENCY_MODES) await send(text, mode);
        await fc.assert(
          fc.asyncProperty(hostileText(bases), fc.constantFrom(...IDEMPOTENCY_MODES), async (text, mode) => send(text, mode)),
          { numRuns: HOSTILE_RUNS * IDEMPOTENCY_MODES.length },
        );
      },
      180_000,
    );
  });
}
