// Every route of the app × {no credentials, no scope, the wrong scopes, the right scope, Bearer with and
// without the scope}. Routes are read from the router itself, so a route added without a declared scope
// fails here: a key with no scopes at all gets past its authentication instead of answering 1221.
// Routes that are not project routes (auth 'none' / 'admin') are listed as exempt below, by name. The sandbox
// dashboard's pages are neither: they take its own session cookie instead of a key, listed in DASHBOARD.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES, type Scope } from '../../src/projects/scopes.js';
import type { SandboxClock } from '../../src/platform/temporal/sandbox-clock.js';
import { type Endpoint as RouteEndpoint, endpointsOf } from './route-list.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';

/** Not project routes: they take no key (none) or the admin token (admin). Nothing else is exempt. */
const EXEMPT: Readonly<Record<string, 'none' | 'admin'>> = {
  // the landing: the dashboard (sandbox mode) or a JSON index of /docs, /openapi.json and /health
  'GET /': 'none',
  'GET /health': 'none',
  'GET /openapi.json': 'none',
  // the API reference UI: its page, its script and the document copies it reads
  'GET /docs': 'none',
  'GET /docs/js/scalar.js': 'none',
  'GET /docs/openapi.json': 'none',
  'GET /docs/openapi.yaml': 'none',
  // the icon of the reference and the dashboard
  'GET /favicon.ico': 'none',
  'POST /v2/request/token': 'none',
  // signed by the PG, not by a project key
  'POST /pg/v1/escrow/notifications/:pg': 'none',
  'POST /admin/v1/projects': 'admin',
  'GET /admin/v1/projects': 'admin',
  'GET /admin/v1/projects/:application_id': 'admin',
  'PATCH /admin/v1/projects/:application_id': 'admin',
  'POST /admin/v1/projects/:application_id/keys/rotate': 'admin',
  'POST /admin/v1/projects/:application_id/webhook/secret': 'admin',
  'GET /admin/v1/projects/:application_id/webhook/deliveries': 'admin',
  'POST /admin/v1/projects/:application_id/webhook/deliveries/:delivery_id/retry': 'admin',
  'PUT /admin/v1/projects/:application_id/upstream': 'admin',
  'GET /admin/v1/projects/:application_id/upstream': 'admin',
  'DELETE /admin/v1/projects/:application_id/upstream': 'admin',
  // the provider calls it: nothing in it is trusted, the provider is asked with the project's keys
  'POST /upstream/v1/notifications/:application_id': 'none',
  // Prometheus scrapes with the admin token
  'GET /metrics': 'admin',
  // one engine, one sandbox clock for every project: only the operator moves it
  'POST /sandbox/v1/clock/advance': 'admin',
};

/**
 * Project routes the admin token opens as well (`adminToo`): reads of installation-wide state. Every other project
 * route refuses the admin token as an unknown access token (9403).
 */
const ADMIN_TOO: ReadonlySet<string> = new Set(['GET /sandbox/v1/clock']);

/**
 * The dashboard's routes (src/dashboard/, sandbox mode): no API key opens them, only the dashboard's signed session
 * (a sign-in with a project's keys or the admin token), and every POST needs that session's CSRF token. Listed by
 * what opens them, so a new page is a decision made here: asset (nothing), public (the sign-in pages), pick (an
 * admin session choosing a project), project (a session on a project; its keys' scopes are checked per page).
 */
const DASHBOARD: Readonly<Record<string, 'asset' | 'public' | 'pick' | 'project'>> = {
  'GET /dashboard/assets/:name': 'asset',
  'GET /dashboard/login': 'public',
  'POST /dashboard/login': 'public',
  'POST /dashboard/logout': 'public',
  'GET /dashboard/projects': 'pick',
  'POST /dashboard/projects': 'pick',
  'GET /dashboard': 'project',
  'GET /dashboard/receipts': 'project',
  'GET /dashboard/receipts/:receipt_id': 'project',
  'POST /dashboard/receipts/:receipt_id/cancel': 'project',
  'GET /dashboard/billing-keys': 'project',
  'GET /dashboard/verifications': 'project',
  'POST /dashboard/verifications': 'project',
  'GET /dashboard/verifications/:receipt_id': 'project',
  'POST /dashboard/verifications/:receipt_id/confirm': 'project',
  'POST /dashboard/verifications/:receipt_id/resend': 'project',
  'GET /dashboard/escrow': 'project',
  'POST /dashboard/escrow': 'project',
  'GET /dashboard/escrow/:receipt_id': 'project',
  'POST /dashboard/escrow/:receipt_id/shipping': 'project',
  'POST /dashboard/escrow/:receipt_id/events': 'project',
  'GET /dashboard/webhooks': 'project',
  'POST /dashboard/webhooks': 'project',
  'POST /dashboard/webhooks/secret': 'project',
  'GET /dashboard/webhooks/secret': 'project',
  'POST /dashboard/webhooks/test': 'project',
  'POST /dashboard/webhooks/deliveries/:delivery_id/retry': 'project',
  'GET /dashboard/notifications': 'project',
  'POST /dashboard/notifications/deliveries/:delivery_id/retry': 'project',
  'GET /dashboard/reserves': 'project',
  'POST /dashboard/reserves/:reserve_id/revoke': 'project',
  'GET /dashboard/schedules': 'project',
  'GET /dashboard/schedules/:schedule_id': 'project',
  'POST /dashboard/schedules/:schedule_id/pause': 'project',
  'POST /dashboard/schedules/:schedule_id/resume': 'project',
  'POST /dashboard/schedules/:schedule_id/cancel': 'project',
  'GET /dashboard/clock': 'project',
  'POST /dashboard/clock/advance': 'project',
};
const isDashboard = (path: string) => path === '/dashboard' || path.startsWith('/dashboard/');

/** The scopes README documents for the routes that exist today; a route not listed must still declare one. */
const KNOWN: Readonly<Record<string, Scope>> = {
  'POST /v2/request/subscribe': 'billing_key',
  'GET /v2/subscribe/billing_key/:receipt_id': 'billing_key',
  'GET /v2/billing_key/:billing_key': 'billing_key',
  'DELETE /v2/subscribe/billing_key/:billing_key': 'billing_key',
  'POST /v2/subscribe/payment': 'subscribe_payment',
  'POST /v2/subscribe/payment/reserve': 'subscribe_payment',
  'GET /v2/subscribe/payment/reserve/:reserve_id': 'subscribe_payment',
  'DELETE /v2/subscribe/payment/reserve/:reserve_id': 'subscribe_payment',
  'POST /v2/subscribe/schedules': 'subscribe_payment',
  'GET /v2/subscribe/schedules': 'subscribe_payment',
  'GET /v2/subscribe/schedules/:schedule_id': 'subscribe_payment',
  'GET /v2/subscribe/schedules/:schedule_id/charges': 'subscribe_payment',
  'GET /v2/subscribe/schedules/:schedule_id/upcoming': 'subscribe_payment',
  'POST /v2/subscribe/schedules/:schedule_id/pause': 'subscribe_payment',
  'POST /v2/subscribe/schedules/:schedule_id/resume': 'subscribe_payment',
  'PATCH /v2/subscribe/schedules/:schedule_id': 'subscribe_payment',
  'DELETE /v2/subscribe/schedules/:schedule_id': 'subscribe_payment',
  'GET /v2/receipt/:receipt_id': 'receipt',
  'POST /v2/cancel': 'cancel',
  'POST /v2/request/authentication': 'authentication',
  'POST /v2/authenticate/realarm': 'authentication',
  'POST /v2/authenticate/confirm': 'authentication',
  'GET /v2/certificate/:receipt_id': 'certificate',
  'GET /sandbox/v1/sms': 'authentication',
  'POST /sandbox/v1/messages': 'message_webhook',
  'PUT /v2/escrow/shipping/start/:receipt_id': 'escrow_shipping_start',
  'GET /v2/escrow/:receipt_id/events': 'receipt',
  'POST /sandbox/v1/payments': 'subscribe_payment',
  'POST /sandbox/v1/escrow/:receipt_id/events': 'escrow_shipping_start',
  'GET /sandbox/v1/pg-requests': 'receipt',
  'GET /sandbox/v1/clock': 'subscribe_payment',
  'GET /message/alimtalk/webhook': 'message_webhook',
  'PUT /message/alimtalk/webhook': 'message_webhook',
  'POST /message/alimtalk/webhook/secret': 'message_webhook',
  'POST /message/alimtalk/webhook/test': 'message_webhook',
  'GET /message/alimtalk/webhook/deliveries': 'message_webhook',
  'POST /message/alimtalk/webhook/deliveries/retry': 'message_webhook',
  'POST /message/alimtalk/webhook/deliveries/:delivery_id/retry': 'message_webhook',
};

/** Every code the authentication hook answers with: anything else means the request got past it. */
const AUTH_CODES = new Set([600, 1203, 1204, 1205, 1206, 1216, 1218, 1221, 1222, 1224, 1225, 9401, 9403]);

interface Endpoint extends RouteEndpoint {
  readonly name: string;
}

const ALTERNATIVES = /:[A-Za-z_]+(\|:[A-Za-z_]+)+/;

/** Routes sharing a parametric node print as `:receipt_id|:billing_key`: name the one this test lists. */
function named(route: RouteEndpoint): Endpoint {
  const alternatives = route.path.match(ALTERNATIVES)?.[0].split('|');
  const candidates = alternatives ? alternatives.map((alt) => route.path.replace(ALTERNATIVES, alt)) : [route.path];
  const known = (c: string) =>
    `${route.method} ${c}` in KNOWN || `${route.method} ${c}` in EXEMPT || `${route.method} ${c}` in DASHBOARD;
  // the dashboard's root answers with and without the trailing slash: one route
  const path = (candidates.find(known) ?? candidates[0]!).replace(/^\/dashboard\/$/, '/dashboard');
  return { method: route.method, path, name: `${route.method} ${path}` };
}

const PARAM = '0123456789abcdef01234567';
const concrete = (path: string) => path.replace(/:[A-Za-z_]+/g, PARAM);

describe('every route declares who may call it and which scope it needs', () => {
  let t: TestApp;
  let endpoints: Endpoint[];
  let noScopes: TestProject;
  const only = new Map<Scope, TestProject>();
  const allBut = new Map<Scope, TestProject>();
  const tokens = new Map<TestProject, string>();

  beforeAll(async () => {
    // a sandbox URL registers the sandbox-only SMS inbox, a sandbox clock the clock routes (registered only with
    // the embedded engine); this test only walks their authentication, so a clock standing still serves
    const still = new Date('2026-01-01T00:00:00Z');
    const sandboxClock: SandboxClock = {
      now: () => still,
      read: async () => still,
      advance: async () => ({ now: still, settled: true }),
      observe: () => undefined,
    };
    t = await buildTestApp({ sandboxUrl: 'http://127.0.0.1:9', sandboxClock });
    endpoints = [
      ...new Map(
        endpointsOf(t.app)
          .map(named)
          .map((e) => [e.name, e]),
      ).values(),
    ];
    noScopes = await t.createProject({ name: 'no scopes', scopes: [] });
    for (const scope of SCOPES) {
      only.set(scope, await t.createProject({ name: `only ${scope}`, scopes: [scope] }));
      allBut.set(scope, await t.createProject({ name: `all but ${scope}`, scopes: SCOPES.filter((s) => s !== scope) }));
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  async function tokenOf(p: TestProject): Promise<string> {
    const known = tokens.get(p);
    if (known) return known;
    const res = await t.app.inject({
      method: 'POST',
      url: '/v2/request/token',
      payload: { application_id: p.applicationId, private_key: p.privateKey },
    });
    expect(res.statusCode).toBe(200);
    const token = res.json().access_token as string;
    tokens.set(p, token);
    return token;
  }

  async function call(
    e: Endpoint,
    authorization?: string,
    remoteAddress?: string,
  ): Promise<{ status: number; code: number | undefined }> {
    const res = await t.app.inject({
      method: e.method as 'GET',
      url: concrete(e.path),
      headers: authorization === undefined ? {} : { authorization },
      ...(remoteAddress === undefined ? {} : { remoteAddress }),
    });
    // the reference UI's routes answer HTML, JavaScript and YAML: only JSON carries a code
    const json = String(res.headers['content-type'] ?? '').includes('json');
    const body = res.body && json ? (res.json() as { code?: number }) : {};
    return { status: res.statusCode, code: body.code };
  }
  const passedAuth = (r: { code: number | undefined }) => r.code === undefined || !AUTH_CODES.has(r.code);

  it('finds the routes of every area (the walk is not empty)', () => {
    const names = endpoints.map((e) => e.name);
    for (const name of [...Object.keys(EXEMPT), ...Object.keys(KNOWN), ...Object.keys(DASHBOARD)])
      expect(names, name).toContain(name);
    // a dashboard route not listed in DASHBOARD is a page nobody decided the access of
    expect(endpoints.filter((e) => isDashboard(e.path) && DASHBOARD[e.name] === undefined).map((e) => e.name)).toEqual([]);
  });

  it('dashboard routes: its session opens them, API keys and the admin token in a header do not; POSTs need the CSRF token', async () => {
    const inject = (e: Endpoint, headers: Record<string, string> = {}, payload?: string) =>
      t.app.inject({
        method: e.method as 'GET',
        url: concrete(e.path),
        headers: payload === undefined ? headers : { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
        ...(payload === undefined ? {} : { payload }),
      });
    // an anonymous session (what the sign-in page hands out) and its form token
    const login = await t.app.inject({ method: 'GET', url: '/dashboard/login' });
    expect(login.statusCode).toBe(200);
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    const token = /name="_csrf" value="([^"]+)"/.exec(login.body)?.[1];
    expect(token).toBeDefined();
    const fullKey = only.get('receipt')!.basicAuth;

    for (const e of endpoints.filter((x) => DASHBOARD[x.name] !== undefined)) {
      const access = DASHBOARD[e.name]!;
      if (e.method === 'GET') {
        const bare = await inject(e);
        if (access === 'asset' || access === 'public') {
          expect(bare.statusCode === 303, e.name).toBe(false);
          continue;
        }
        // no session: to the sign-in page, whatever key or admin token the request carries
        for (const authorization of [undefined, fullKey, `Bearer ${TEST_ADMIN_TOKEN}`]) {
          const res = await inject(e, authorization === undefined ? {} : { authorization });
          expect(res.statusCode, `${e.name} ${authorization ?? ''}`).toBe(303);
          expect(res.headers.location, e.name).toBe('/dashboard/login');
        }
        // an anonymous session is not signed in either
        expect((await inject(e, { cookie })).statusCode, e.name).toBe(303);
      } else {
        // without the session's token nothing runs: 9485, keys or not
        for (const headers of [{}, { cookie }, { authorization: fullKey }] as Record<string, string>[]) {
          const res = await inject(e, headers, 'client_key=x&secret_key=y');
          expect(res.statusCode, e.name).toBe(403);
          expect(res.body, e.name).toContain('9485');
        }
        const signedOut = await inject(e, { cookie }, `_csrf=${token}`);
        if (access === 'public') expect(signedOut.statusCode === 403 || signedOut.statusCode === 401, e.name).toBe(false);
        else {
          expect(signedOut.statusCode, e.name).toBe(401);
          expect(signedOut.body, e.name).toContain('9486');
        }
      }
    }
  });

  it('exempt routes: none take no credentials, admin ones refuse a project key', async () => {
    // each admin route from its own address: the wrong-admin-token throttle (10 per IP and minute) is not under test
    let host = 0;
    for (const e of endpoints.filter((x) => EXEMPT[x.name] !== undefined)) {
      if (EXEMPT[e.name] === 'none') {
        expect(passedAuth(await call(e)), e.name).toBe(true);
      } else {
        const from = `10.9.0.${++host}`;
        expect((await call(e, undefined, from)).code, e.name).toBe(9401);
        expect((await call(e, only.get('billing_key')!.basicAuth, from)).code, e.name).toBe(9401);
        expect(passedAuth(await call(e, `Bearer ${TEST_ADMIN_TOKEN}`, from)), e.name).toBe(true);
      }
    }
  });

  it('the admin token opens only the project routes listed in ADMIN_TOO, and a project token is no admin token there', async () => {
    let host = 0;
    const projectRoutes = endpoints.filter((x) => EXEMPT[x.name] === undefined && DASHBOARD[x.name] === undefined);
    for (const name of ADMIN_TOO)
      expect(
        projectRoutes.map((e) => e.name),
        name,
      ).toContain(name);
    for (const e of projectRoutes) {
      // each from its own address: the throttles are not under test
      const from = `10.8.0.${++host}`;
      const admin = await call(e, `Bearer ${TEST_ADMIN_TOKEN}`, from);
      if (ADMIN_TOO.has(e.name)) {
        expect(passedAuth(admin), e.name).toBe(true);
        // a wrong Bearer value is an unknown access token, not an admin
        expect((await call(e, `Bearer ${TEST_ADMIN_TOKEN}x`, from)).code, e.name).toBe(9403);
      } else {
        expect(admin.code, e.name).toBe(9403);
      }
    }
  });

  it('every other route needs credentials and a scope: a key without scopes gets 1221', async () => {
    const missing: string[] = [];
    for (const e of endpoints.filter((x) => EXEMPT[x.name] === undefined && DASHBOARD[x.name] === undefined)) {
      expect((await call(e)).code, e.name).toBe(1206);
      const r = await call(e, noScopes.basicAuth);
      if (r.code !== 1221) missing.push(`${e.name} -> ${r.status} ${r.code ?? ''}`);
    }
    // a route listed here declares no scope in its config: add `scope: '...'` (or list it as exempt)
    expect(missing).toEqual([]);
  });

  it('exactly one scope opens each route, for Basic keys and Bearer tokens alike', async () => {
    for (const e of endpoints.filter((x) => EXEMPT[x.name] === undefined && DASHBOARD[x.name] === undefined)) {
      const opening: Scope[] = [];
      for (const scope of SCOPES) if (passedAuth(await call(e, only.get(scope)!.basicAuth))) opening.push(scope);
      expect(opening, e.name).toHaveLength(1);
      const scope = opening[0]!;
      if (KNOWN[e.name] !== undefined) expect(scope, e.name).toBe(KNOWN[e.name]);

      // Basic: every other scope together is not enough
      expect((await call(e, allBut.get(scope)!.basicAuth)).code, e.name).toBe(1222);
      // Bearer: the token carries its project's scopes
      expect(passedAuth(await call(e, `Bearer ${await tokenOf(only.get(scope)!)}`)), e.name).toBe(true);
      const withoutScope = await call(e, `Bearer ${await tokenOf(allBut.get(scope)!)}`);
      // only shipping start takes a token without its scope, as the spec says (not the rest of its area)
      const shippingStart = e.name === 'PUT /v2/escrow/shipping/start/:receipt_id';
      if (shippingStart) expect(passedAuth(withoutScope), e.name).toBe(true);
      else expect(withoutScope.code, e.name).toBe(1222);
      const noScopeToken = await call(e, `Bearer ${await tokenOf(noScopes)}`);
      if (shippingStart) expect(passedAuth(noScopeToken), e.name).toBe(true);
      else expect(noScopeToken.code, e.name).toBe(1221);
    }
  });
});
