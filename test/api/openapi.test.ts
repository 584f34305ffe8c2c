// The OpenAPI document (/openapi.json) and the reference UI (/docs): every route the router holds is in the
// document with a response schema, an example, its catalog errors and the security its authentication
// really enforces; the document is valid OpenAPI 3.1 with every $ref resolvable; the examples satisfy the
// documented schemas; the UI loads nothing from outside the server; documenting changes no response.
import { validate } from '@scalar/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { DOCS_PREFIX, isUiRoute, OPENAPI_VERSION, routeDocs } from '../../src/api/docs/openapi.js';
import { errorCatalog, type ErrorName } from '../../src/platform/errors.js';
import type { SandboxClock } from '../../src/platform/temporal/sandbox-clock.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import { TEST_CARD } from '../payments/key-in-fixtures.js';
import { concretePath, endpointsOf } from './route-list.js';

interface Operation {
  operationId?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: { in: string; name: string }[];
  requestBody?: { content: Record<string, { schema?: unknown; example?: unknown }> };
  responses: Record<string, { description: string; content?: Record<string, { schema?: unknown; example?: unknown }> }>;
}
type Document = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; examples: Record<string, { value: { code: number } }> };
  tags: { name: string }[];
};

const still = new Date('2026-01-01T00:00:00Z');
const sandboxClock: SandboxClock = {
  now: () => still,
  read: async () => still,
  advance: async () => ({ now: still, settled: true }),
  observe: () => undefined,
};

let t: TestApp;
let project: TestProject;
let doc: Document;

beforeAll(async () => {
  // every optional area registered: the sandbox helpers (a sandbox URL) and the sandbox clock
  t = await buildTestApp({ sandboxUrl: 'http://127.0.0.1:9', sandboxClock });
  project = await t.createProject();
  const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
  expect(res.statusCode).toBe(200);
  doc = res.json() as Document;
});
afterAll(async () => {
  await t?.close();
});

/** The document's path of a router path: `:name` -> `{name}`. */
const openapiPath = (path: string) => path.replace(/:([A-Za-z_]+)/g, '{$1}');

/** The operation of a router endpoint; a node shared by several names (`:a|:b`) matches any of them. */
function operationOf(method: string, path: string): Operation | undefined {
  const alternatives = path.match(/:[A-Za-z_]+(\|:[A-Za-z_]+)+/)?.[0].split('|') ?? [];
  const candidates =
    alternatives.length > 0 ? alternatives.map((alt) => path.replace(/:[A-Za-z_]+(\|:[A-Za-z_]+)+/, alt)) : [path];
  for (const candidate of candidates) {
    const op = doc.paths[openapiPath(candidate)]?.[method.toLowerCase()];
    if (op) return op;
  }
  return undefined;
}

describe('GET /openapi.json', () => {
  it('is OpenAPI 3.1 and valid against the OpenAPI 3.1 schema', async () => {
    expect(doc.openapi).toBe(OPENAPI_VERSION);
    const result = await validate(doc as unknown as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('resolves every $ref', () => {
    const refs: string[] = [];
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(walk);
      else if (value !== null && typeof value === 'object') {
        for (const [key, child] of Object.entries(value)) {
          if (key === '$ref' && typeof child === 'string') refs.push(child);
          else walk(child);
        }
      }
    };
    walk(doc);
    expect(refs.length).toBeGreaterThan(100);
    for (const ref of new Set(refs)) {
      expect(ref, ref).toMatch(/^#\//);
      let target: unknown = doc;
      for (const part of ref.slice(2).split('/')) {
        const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
        target = (target as Record<string, unknown> | undefined)?.[key];
      }
      expect(target, ref).toBeDefined();
    }
  });

  it('documents every registered route: response schema, example, errors, tag and the security it enforces', async () => {
    const endpoints = endpointsOf(t.app).filter((e) => !isUiRoute(e.path));
    expect(endpoints.length).toBeGreaterThan(45);
    const tags = new Set(doc.tags.map((tag) => tag.name));
    const operationIds = new Set<string>();
    const missing: string[] = [];
    for (const e of endpoints) {
      const name = `${e.method} ${e.path}`;
      const op = operationOf(e.method, e.path);
      // present without an operationId: collected by @fastify/swagger, but with no documentation entry
      if (!op?.operationId) {
        missing.push(name);
        continue;
      }
      expect(op.operationId, name).toMatch(/^[a-z][A-Za-z]+$/);
      expect(operationIds.has(op.operationId!), `${name}: operationId ${op.operationId} repeated`).toBe(false);
      operationIds.add(op.operationId!);
      expect(op.tags, name).toHaveLength(1);
      expect(tags.has(op.tags![0]!), name).toBe(true);

      const success = Object.entries(op.responses).filter(([status]) => status.startsWith('2'));
      expect(success, name).toHaveLength(1);
      const [media] = Object.values(success[0]![1].content ?? {});
      expect(media?.schema, `${name}: response schema`).toBeDefined();
      expect(media?.example, `${name}: response example`).toBeDefined();
      if (op.requestBody) expect(Object.values(op.requestBody.content)[0]?.example, `${name}: request example`).toBeDefined();

      // every error status lists catalog errors answered with that status
      for (const [status, response] of Object.entries(op.responses).filter(([s]) => !s.startsWith('2'))) {
        const examples = Object.keys((response.content?.['application/json'] as { examples?: object })?.examples ?? {});
        expect(examples.length, `${name} ${status}`).toBeGreaterThan(0);
        for (const errorName of examples)
          expect(errorCatalog[errorName as ErrorName]?.status, `${name} ${errorName}`).toBe(Number(status));
      }

      // the security the route's authentication really enforces, found by calling it without credentials
      const res = await t.app.inject({ method: e.method as 'GET', url: concretePath(e.path, '0123456789abcdef01234567') });
      const code = res.body.startsWith('{') ? (res.json() as { code?: number }).code : undefined;
      // a project route the admin token opens too (`adminToo`): any other route answers it as an unknown token (9403)
      const adminToo =
        code === 1206 &&
        (
          (
            await t.app.inject({
              method: e.method as 'GET',
              url: concretePath(e.path, '0123456789abcdef01234567'),
              headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
              // each from its own address: the failed-authentication throttle is not under test
              remoteAddress: `10.6.${Math.floor(operationIds.size / 200)}.${operationIds.size % 200}`,
            })
          ).json() as { code?: number }
        ).code !== 9403;
      const expected =
        code === 1206
          ? [{ basic: [] }, { bearer: [] }, ...(adminToo ? [{ adminToken: [] }] : [])]
          : code === 9401
            ? [{ adminToken: [] }]
            : ([] as Record<string, string[]>[]);
      expect(op.security, name).toEqual(expected);
      if (code === 1206) expect(op.responses['401'] && op.responses['403'], name).toBeTruthy();
      // every project POST takes Idempotency-Key, and the document says so
      if (code === 1206 && e.method === 'POST') {
        expect(
          op.parameters?.some((p) => p.in === 'header' && p.name === 'idempotency-key'),
          name,
        ).toBe(true);
      }
    }
    // a route listed here has no contract in its area's http.ts: add one (schemas, example, errors, summary)
    expect(missing).toEqual([]);
  });

  it('leaves the browser pages (/docs, /dashboard) out and documents no route the router does not hold', () => {
    const routed = endpointsOf(t.app).map((e) => `${e.method} ${concretePath(e.path, 'P')}`);
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const method of Object.keys(ops)) {
        const name = `${method.toUpperCase()} ${concretePath(path.replace(/\{([^}]+)\}/g, ':$1'), 'P')}`;
        expect(routed, name).toContain(name);
      }
    }
  });

  it('every example satisfies the zod schema it documents, and every error is in the catalog', () => {
    for (const [name, routeDoc] of Object.entries(routeDocs)) {
      const response = routeDoc.response.schema.safeParse(routeDoc.example.response);
      expect(response.error?.issues ?? [], `${name} response example`).toEqual([]);
      if (routeDoc.body) {
        expect(routeDoc.example.request, `${name} request example`).toBeDefined();
        const request = routeDoc.body.safeParse(routeDoc.example.request);
        expect(request.error?.issues ?? [], `${name} request example`).toEqual([]);
      }
      for (const errorName of routeDoc.errors) expect(errorCatalog[errorName], `${name} ${errorName}`).toBeDefined();
    }
    for (const [name, example] of Object.entries(doc.components.examples)) {
      expect(example.value.code, name).toBe(errorCatalog[name as ErrorName].code);
    }
  });

  it('real answers satisfy the documented schemas (billing key, charge, receipt, cancel)', async () => {
    const send = async (method: 'GET' | 'POST', url: string, payload?: object) => {
      const res = await t.app.inject({
        method,
        url,
        headers: { authorization: project.basicAuth },
        ...(payload ? { payload } : {}),
      });
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as Record<string, unknown>;
    };
    const check = (key: string, body: unknown) => {
      const parsed = routeDocs[key]!.response.schema.safeParse(body);
      expect(parsed.error?.issues ?? [], key).toEqual([]);
    };
    const issued = await send('POST', '/v2/request/subscribe', TEST_CARD);
    check('POST /v2/request/subscribe', issued);
    check('GET /v2/billing_key/:billing_key', await send('GET', `/v2/billing_key/${issued.billing_key}`));
    const paid = await send('POST', '/v2/subscribe/payment', {
      billing_key: issued.billing_key,
      order_id: 'openapi-1',
      order_name: 'June',
      price: 1000,
    });
    check('POST /v2/subscribe/payment', paid);
    check('GET /v2/receipt/:receipt_id', await send('GET', `/v2/receipt/${paid.receipt_id}`));
    check('POST /v2/cancel', await send('POST', '/v2/cancel', { receipt_id: paid.receipt_id, cancel_price: 100 }));
    const admin = await t.app.inject({
      method: 'GET',
      url: '/admin/v1/projects',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    });
    check('GET /admin/v1/projects', admin.json());
  });

  it('changes no response: a lookup answers byte for byte what the service returns', async () => {
    const issued = await t.app.inject({
      method: 'POST',
      url: '/v2/request/subscribe',
      headers: { authorization: project.basicAuth },
      payload: { ...TEST_CARD, subscription_id: 'sub-bytes' },
    });
    const billingKey = (issued.json() as { billing_key: string }).billing_key;
    const res = await t.app.inject({
      method: 'GET',
      url: `/v2/billing_key/${billingKey}`,
      headers: { authorization: project.basicAuth },
    });
    const fromService = await t.app.deps.services.billingKeys.lookup(project.project, billingKey);
    expect(res.body).toBe(JSON.stringify(fromService));
  });
});

describe('GET /docs', () => {
  it('renders the reference from the server alone: every asset it references answers, nothing is fetched from elsewhere', async () => {
    const redirect = await t.app.inject({ method: 'GET', url: DOCS_PREFIX });
    expect(redirect.statusCode).toBe(301);
    expect(redirect.headers.location).toBe(`${DOCS_PREFIX}/`);

    const page = await t.app.inject({ method: 'GET', url: `${DOCS_PREFIX}/` });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    const html = page.body;
    // no absolute URL anywhere in the page: no CDN script, no fonts, no stylesheet from elsewhere
    expect(html).not.toMatch(/(https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}/i);
    expect(html).toMatch(/"withDefaultFonts": false/);
    expect(html).toMatch(/"proxyUrl": ""/);
    expect(html).toMatch(/"telemetry": false/);

    const referenced = [
      ...[...html.matchAll(/\s(?:src|href)="([^"]+)"/g)].map((m) => m[1]!),
      ...[...html.matchAll(/"url": "([^"]+)"/g)].map((m) => m[1]!),
    ];
    expect(referenced).toContain('js/scalar.js');
    expect(referenced).toContain('./openapi.json');
    for (const relative of referenced) {
      const url = new URL(relative, `http://paygate.test${DOCS_PREFIX}/`);
      expect(url.host, relative).toBe('paygate.test');
      const asset = await t.app.inject({ method: 'GET', url: url.pathname });
      expect(asset.statusCode, relative).toBe(200);
      expect(asset.body.length, relative).toBeGreaterThan(1000);
      if (relative.endsWith('.js')) expect(asset.headers['content-type'], relative).toMatch(/javascript/);
      if (relative.endsWith('.json')) {
        // the UI reads the same document as /openapi.json
        expect(Object.keys((asset.json() as Document).paths).sort()).toEqual(Object.keys(doc.paths).sort());
      }
    }
  });

  it('is served under a CSP that allows this server and the inline starter by its hash, and is never framed', async () => {
    const page = await t.app.inject({ method: 'GET', url: `${DOCS_PREFIX}/` });
    const csp = String(page.headers['content-security-policy']);
    const directives = Object.fromEntries(
      csp.split(';').map((d) => {
        const [name, ...values] = d.trim().split(/\s+/);
        return [name, values];
      }),
    );
    expect(directives['default-src']).toEqual(["'none'"]);
    expect(directives['frame-ancestors']).toEqual(["'none'"]);
    expect(directives['base-uri']).toEqual(["'none'"]);
    expect(directives['connect-src']).toEqual(["'self'"]);
    // the bundle from here, and the inline starter by its hash: no 'unsafe-inline', no 'unsafe-eval', no host
    const inline = /<script type="text\/javascript">([\s\S]*?)<\/script>/.exec(page.body)![1]!;
    expect(directives['script-src']).toEqual(["'self'", `'sha256-${createHash('sha256').update(inline).digest('base64')}'`]);
    expect(csp).not.toMatch(/https?:|\*/);
    expect(page.headers['x-frame-options']).toBe('DENY');
    for (const url of [`${DOCS_PREFIX}/js/scalar.js`, `${DOCS_PREFIX}/openapi.json`]) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.headers['content-security-policy'], url).toBe("default-src 'none'; frame-ancestors 'none'");
      expect(res.headers['x-frame-options'], url).toBe('DENY');
    }
  });

  it('needs no credentials and is left out of the document itself', async () => {
    const page = await t.app.inject({ method: 'GET', url: `${DOCS_PREFIX}/js/scalar.js` });
    expect(page.statusCode).toBe(200);
    expect(Object.keys(doc.paths).filter((p) => isUiRoute(p))).toEqual([]);
  });
});
