// Shared request helpers for the identity-verification HTTP tests.
import { randomInt } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApp, TestProject } from '../helpers/app.js';

export const VERIFICATION_METHOD = '본인인증';
export const ISO_KST = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+09:00$/;

export const REQUEST_RESPONSE_KEYS = [
  'authenticate_data',
  'authentication_id',
  'metadata',
  'method',
  'method_origin',
  'method_origin_symbol',
  'method_symbol',
  'pg',
  'receipt_id',
  'requested_at',
  'status',
];

export const RESULT_KEYS = [
  'authenticate_data',
  'authenticated_at',
  'authentication_id',
  'gateway_url',
  'metadata',
  'method',
  'method_origin',
  'method_origin_symbol',
  'method_symbol',
  'pg',
  'receipt_id',
  'requested_at',
  'status',
  'status_locale',
];

export const PERSON_KEYS = ['birth', 'carrier', 'di', 'foreigner', 'gender', 'name', 'phone', 'tid', 'unique'];

/** A fresh mobile number per test, so the shared sandbox inbox never mixes tests (never a magic 0100000000x). */
export function freshPhone(): string {
  return `0109${String(randomInt(0, 10_000_000)).padStart(7, '0')}`;
}

export function verificationBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    pg: 'sandbox_identity',
    method: VERIFICATION_METHOD,
    order_name: 'Sign-up',
    authentication_id: `auth-${randomInt(0, 1e9)}`,
    username: '홍길동',
    identity_no: '9001011',
    phone: freshPhone(),
    carrier: 'SKT',
    ...overrides,
  };
}

export interface JsonResponse {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

export function verificationClient(t: TestApp, project: TestProject) {
  const send = async (
    method: 'GET' | 'POST',
    url: string,
    body?: unknown,
    opts: { remoteAddress?: string; authorization?: string } = {},
  ): Promise<JsonResponse> => {
    const res = await t.app.inject({
      method,
      url,
      headers: { authorization: opts.authorization ?? project.basicAuth },
      ...(opts.remoteAddress ? { remoteAddress: opts.remoteAddress } : {}),
      ...(body === undefined ? {} : { payload: body as object }),
    });
    return { status: res.statusCode, body: res.json() as Record<string, unknown> };
  };
  const client = {
    send,
    request: (overrides: Record<string, unknown> = {}, opts?: { remoteAddress?: string }) =>
      send('POST', '/v2/request/authentication', verificationBody(overrides), opts),
    realarm: (receiptId: unknown) => send('POST', '/v2/authenticate/realarm', { receipt_id: receiptId }),
    confirm: (receiptId: unknown, otp?: unknown) =>
      send('POST', '/v2/authenticate/confirm', otp === undefined ? { receipt_id: receiptId } : { receipt_id: receiptId, otp }),
    certificate: (receiptId: string) => send('GET', `/v2/certificate/${encodeURIComponent(receiptId)}`),
    async inbox(phone: string): Promise<{ phone: string; message: string; otp: string; sent_at: string }[]> {
      const res = await send('GET', `/sandbox/v1/sms?phone=${phone}`);
      expect(res.status).toBe(200);
      return res.body.list as { phone: string; message: string; otp: string; sent_at: string }[];
    },
    async latestOtp(phone: string): Promise<string> {
      const [newest] = await client.inbox(phone);
      expect(newest, `an SMS to ${phone}`).toBeDefined();
      return newest!.otp;
    },
    /** request (status 51 expected) */
    async requested(
      overrides: Record<string, unknown> = {},
    ): Promise<{ receiptId: string; phone: string; body: Record<string, unknown> }> {
      const phone = typeof overrides.phone === 'string' ? overrides.phone : freshPhone();
      const res = await client.request({ phone, ...overrides });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return { receiptId: res.body.receipt_id as string, phone, body: res.body };
    },
    /** request + confirm with the SMS OTP (status 12 expected) */
    async verified(
      overrides: Record<string, unknown> = {},
    ): Promise<{ receiptId: string; phone: string; body: Record<string, unknown> }> {
      const { receiptId, phone } = await client.requested(overrides);
      const res = await client.confirm(receiptId, await client.latestOtp(phone));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return { receiptId, phone, body: res.body };
    },
  };
  return client;
}

export type VerificationClient = ReturnType<typeof verificationClient>;

/** Asserts no value anywhere in the response is null: keys without a value are absent. */
export function expectNoNulls(value: unknown, path = '$'): void {
  expect(value, path).not.toBeNull();
  if (typeof value === 'object' && value !== null) {
    for (const [key, inner] of Object.entries(value)) expectNoNulls(inner, `${path}.${key}`);
  }
}

export function expectApiError(res: JsonResponse, httpStatus: number, code: number, errorCode: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(httpStatus);
  expect(res.body.code).toBe(code);
  expect(res.body.error_code).toBe(errorCode);
}
