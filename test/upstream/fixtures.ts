// Shared by the connector's tests: routing a project of A (the relay) to its provider B over the admin API, and
// arming a fault on B's own sandbox PGs.
import { expect } from 'vitest';
import { TEST_ADMIN_TOKEN, TEST_SANDBOX_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';

/**
 * PUT /admin/v1/projects/{id}/upstream on `a`: the project's `pgs` live at `baseUrl` under the provider project's
 * keys (`secretKey` overrides the right one). Answers the configuration as rendered.
 */
export async function routeToProvider(
  a: TestApp,
  project: TestProject,
  provider: { readonly baseUrl: string; readonly project: TestProject; readonly secretKey?: string },
  pgs: readonly string[],
): Promise<Record<string, unknown>> {
  const res = await a.app.inject({
    method: 'PUT',
    url: `/admin/v1/projects/${project.applicationId}/upstream`,
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    payload: {
      base_url: provider.baseUrl,
      client_key: provider.project.clientKey,
      secret_key: provider.secretKey ?? provider.project.secretKey,
      pgs,
    },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Record<string, unknown>;
}

/** Arms the provider's own sandbox PGs (B's internal fault board) for its next `count` calls of `operation`. */
export async function armProviderFault(b: TestApp, operation: string, fault: string, count = 1): Promise<void> {
  const res = await fetch(`${b.sandboxUrl}/_sandbox/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_SANDBOX_TOKEN}` },
    body: JSON.stringify({ operation, fault, count }),
    signal: AbortSignal.timeout(10_000),
  });
  expect(res.ok).toBe(true);
}

/**
 * A dashboard session on `t`, signed in with the admin token or with a project's keys: its cookie (the session's
 * random id), for `inject`'s headers.
 */
export async function dashboardSignIn(
  t: TestApp,
  as: { readonly admin_token: string } | { readonly client_key: string; readonly secret_key: string },
): Promise<string> {
  const login = await t.app.inject({ url: '/dashboard/login' });
  const cookie = String(login.headers['set-cookie']).split(';')[0]!;
  const csrf = /name="_csrf" value="([^"]+)"/.exec(login.body)?.[1] ?? '';
  const signedIn = await t.app.inject({
    method: 'POST',
    url: '/dashboard/login',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ _csrf: csrf, ...as }).toString(),
  });
  expect(signedIn.statusCode).toBe(303);
  return String(signedIn.headers['set-cookie']).split(';')[0]!;
}
