// Shared request helpers for the key-in billing tests (billing, receipt, cancel, idempotency, no-leak).
import { expect } from 'vitest';
import type { TestApp, TestProject } from '../helpers/app.js';
import { TEST_SANDBOX_TOKEN } from '../helpers/app.js';

export const KEY_IN_METHOD = '카드자동(REST)';

export const TEST_CARD = {
  pg: 'sandbox_card',
  method: KEY_IN_METHOD,
  subscription_id: 'sub-001',
  order_name: 'Monthly plan',
  card_no: '4111111111111111',
  card_pw: '12',
  card_identity_no: '900101',
  card_expire_year: '30',
  card_expire_month: '12',
};

export interface JsonResponse {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Record<string, unknown>;
}

export function keyInClient(t: TestApp, project: TestProject) {
  let orderSeq = 0;
  const send = async (
    method: 'GET' | 'POST' | 'DELETE',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<JsonResponse> => {
    const res = await t.app.inject({
      method,
      url,
      headers: { authorization: project.basicAuth, ...headers },
      ...(body === undefined ? {} : { payload: body as object }),
    });
    return { status: res.statusCode, body: res.json() as Record<string, unknown>, headers: res.headers };
  };
  return {
    send,
    post: (url: string, body: unknown, headers?: Record<string, string>) => send('POST', url, body, headers),
    get: (url: string) => send('GET', url),
    issue: (overrides: Record<string, unknown> = {}) => send('POST', '/v2/request/subscribe', { ...TEST_CARD, ...overrides }),
    async issuedKey(overrides: Record<string, unknown> = {}): Promise<string> {
      const res = await send('POST', '/v2/request/subscribe', { ...TEST_CARD, ...overrides });
      expect(res.status).toBe(200);
      return res.body.billing_key as string;
    },
    charge(billingKey: string, overrides: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
      orderSeq += 1;
      return send(
        'POST',
        '/v2/subscribe/payment',
        {
          billing_key: billingKey,
          order_name: 'June',
          order_id: `order-${project.applicationId}-${orderSeq}`,
          price: 1000,
          ...overrides,
        },
        headers,
      );
    },
    cancel: (body: Record<string, unknown>, headers?: Record<string, string>) => send('POST', '/v2/cancel', body, headers),
  };
}

/** Every call to the sandbox's test endpoints gives up after this long instead of hanging a test. */
const SANDBOX_CALL_TIMEOUT_MS = 10_000;

/** GET on a sandbox inspection endpoint (/_sandbox/...), parsed as JSON. */
export async function sandboxGet<T>(sandboxUrl: string, path: string): Promise<T> {
  const res = await fetch(`${sandboxUrl}${path}`, {
    headers: { authorization: `Bearer ${TEST_SANDBOX_TOKEN}` },
    signal: AbortSignal.timeout(SANDBOX_CALL_TIMEOUT_MS),
  });
  expect(res.ok).toBe(true);
  return (await res.json()) as T;
}

/** How many times the sandbox PG really executed charges sent under `idempotencyKey`. */
export async function sandboxChargeExecutions(sandboxUrl: string, idempotencyKey: string): Promise<number> {
  const stats = await sandboxGet<{ executions: number }>(
    sandboxUrl,
    `/_sandbox/charges?idempotency_key=${encodeURIComponent(idempotencyKey)}`,
  );
  return stats.executions;
}

/** Arms the sandbox PG to fail its next `count` calls of `operation`. */
export async function armSandboxFault(
  sandboxUrl: string,
  operation: string,
  fault: '500' | 'timeout' | 'garbage' | 'late',
  count = 1,
): Promise<void> {
  const res = await fetch(`${sandboxUrl}/_sandbox/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_SANDBOX_TOKEN}` },
    body: JSON.stringify({ operation, fault, count }),
    signal: AbortSignal.timeout(SANDBOX_CALL_TIMEOUT_MS),
  });
  expect(res.ok).toBe(true);
}
