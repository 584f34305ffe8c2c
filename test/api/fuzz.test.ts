// Property-based fuzzing of EVERY route of the app (enumerated from the router itself, so a new
// route is fuzzed without touching this file): >= 1,000 generated requests per endpoint with valid
// credentials plus 250 without. Malformed JSON, arrays, scalars, wrong types, missing fields, huge
// strings, unknown content types, odd path parameters. Never a 5xx; every error body is a catalog
// entry; a refused mutating request changes no row of any table.
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCatalog, type ErrorName } from '../../src/domain/errors.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import { TEST_CARD } from './key-in-fixtures.js';

const RUNS_WITH_AUTH = 1_000;
const RUNS_WITHOUT_AUTH = 250;
const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

interface Endpoint {
  readonly method: string;
  /** the router's path, e.g. /v2/receipt/:receipt_id */
  readonly path: string;
}

/** Parses `printRoutes({ commonPrefix: false })`: one tree line per node, children indented by 4. */
function routesOf(tree: string): Endpoint[] {
  const endpoints: Endpoint[] = [];
  const prefixes: string[] = [];
  for (const line of tree.split('\n')) {
    const at = line.indexOf('── ');
    if (at < 0) continue;
    const depth = Math.floor(at / 4);
    const match = /^(\S+)(?: \(([^)]*)\))?/.exec(line.slice(at + 3));
    if (!match) continue;
    const path = (depth > 0 ? (prefixes[depth - 1] ?? '') : '') + match[1]!;
    prefixes[depth] = path;
    prefixes.length = depth + 1;
    for (const method of (match[2] ?? '').split(',').map((m) => m.trim())) {
      if (method && method !== 'HEAD' && method !== 'OPTIONS') endpoints.push({ method, path });
    }
  }
  return endpoints;
}

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

// Built at load time so that each endpoint gets its own test (and its own timeout).
const t: TestApp = await buildTestApp({ env: { LOG_LEVEL: 'warn' } });
const project: TestProject = await t.createProject();
const endpoints: Endpoint[] = routesOf(t.app.printRoutes({ commonPrefix: false }));
let stateQuery: ReturnType<typeof sql<{ state: string }>>;

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

function concretePath(path: string, param: string): string {
  return path.replace(/:[A-Za-z_]+(\|:[A-Za-z_]+)*/g, param);
}

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
        const body = res.json() as { error_code?: string; code?: number; message?: string };
        expect(body.error_code, context).toEqual(expect.any(String));
        expect(body.code).toBe(errorCatalog[body.error_code as ErrorName]?.code);
        expect(body.message).toEqual(expect.any(String));
        if (mutating) expect(await databaseState(), context).toBe(known);
      } else if (mutating) {
        known = await databaseState();
      }
    }),
    { numRuns },
  );
}

describe('fuzzing every endpoint', () => {
  it('finds every route of the app, including the platform and billing ones', () => {
    const names = endpoints.map((e) => `${e.method} ${e.path}`);
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
    const routed = new Set(endpoints.map((e) => `${e.method} ${e.path.replace(/:[A-Za-z_]+\|/g, '')}`));
    for (const op of documented) {
      const alternatives = endpoints.some(
        (e) => e.method === op.split(' ')[0] && concretePath(e.path, 'P') === concretePath(op.split(' ')[1]!, 'P'),
      );
      expect(alternatives || routed.has(op), op).toBe(true);
    }
  });

  it.each(endpoints.map((e) => [`${e.method} ${e.path}`, e] as const))(
    '%s: never a 5xx, always a catalog error, refusals change nothing',
    async (_name, endpoint) => {
      await fuzz(endpoint, 'valid', RUNS_WITH_AUTH);
      await fuzz(endpoint, 'none', RUNS_WITHOUT_AUTH);
    },
    180_000,
  );
});
