// The merchant's calls the flow benches make against paygate over HTTP (bench/flows.ts, bench/scale.ts): one
// undici pool per API address, the answer parsed, and the flows both benches drive.
import { randomUUID } from 'node:crypto';
import type { Pool } from 'undici';

export interface Target {
  readonly pool: Pool;
  readonly auth: string;
}

export interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

export async function call(
  target: Target,
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await target.pool.request({
    method,
    path,
    headers: {
      authorization: target.auth,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

export function expectOk(answer: Answer, what: string): Record<string, unknown> {
  if (answer.status !== 200 && answer.status !== 201) {
    throw new Error(`${what}: HTTP ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
  }
  return answer.body;
}

export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

export const randomPhone = () => `010${String(20_000_000 + Math.floor(Math.random() * 70_000_000))}`;

/** Issues a billing key on the sandbox card PG (the key every charge of a bench uses). */
export async function issueBillingKey(target: Target): Promise<string> {
  const issued = expectOk(
    await call(target, 'POST', '/v2/request/subscribe', {
      pg: 'sandbox_card',
      method: '카드자동(REST)',
      subscription_id: `bench-${randomUUID()}`,
      order_name: 'bench',
      card_no: '4111111111111111',
      card_pw: '12',
      card_identity_no: '900101',
      card_expire_year: '30',
      card_expire_month: '12',
    }),
    'billing key',
  );
  return issued.billing_key as string;
}

/** A billing-key charge of one order; resolves with its receipt_id. */
export async function charge(target: Target, billingKey: string, orderId: string, price = 1000): Promise<string> {
  return expectOk(
    await call(target, 'POST', '/v2/subscribe/payment', {
      billing_key: billingKey,
      order_name: 'bench',
      order_id: orderId,
      price,
    }),
    'charge',
  ).receipt_id as string;
}

/** The verification's five calls: request, resend, the sandbox inbox, confirm with the resent code, lookup. */
export async function verification(target: Target): Promise<string> {
  const to = randomPhone();
  const requested = expectOk(
    await call(target, 'POST', '/v2/request/authentication', {
      pg: 'sandbox_identity',
      method: '본인인증',
      order_name: 'bench',
      authentication_id: `bench-${randomUUID()}`,
      username: '홍길동',
      identity_no: '9001011',
      phone: to,
      carrier: 'SKT',
    }),
    'verification request',
  );
  const receiptId = requested.receipt_id as string;
  expectOk(await call(target, 'POST', '/v2/authenticate/realarm', { receipt_id: receiptId }), 'resend');
  const inbox = expectOk(await call(target, 'GET', `/sandbox/v1/sms?phone=${to}`), 'inbox');
  const otp = (inbox.list as { otp: string }[])[0]!.otp; // newest first: the resent code
  expectOk(await call(target, 'POST', '/v2/authenticate/confirm', { receipt_id: receiptId, otp }), 'confirm');
  expectOk(await call(target, 'GET', `/v2/certificate/${receiptId}`), 'lookup');
  return receiptId;
}
