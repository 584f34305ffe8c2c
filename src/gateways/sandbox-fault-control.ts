// Typed client for the sandbox's fault board (POST / GET / DELETE /_sandbox/faults), which paygate's
// /sandbox/v1/faults serves to merchants: faults armed for one merchant (the project's application_id,
// the merchant_id the adapters give the PG) apply to that merchant's calls only. The sandbox's own
// operation and fault names stay in this file; the rest of paygate speaks the merchant-facing ones.
import { request } from 'undici';
import { z } from 'zod';
import type { SandboxEndpoint } from './sandbox-inbox.js';
import { GatewayUnavailableError } from './types.js';

const TIMEOUT_MS = 5_000;

/** The sandbox PG operations a merchant can fault, by their merchant-facing names. */
export const FAULT_OPERATION_WIRE = {
  issue_billing_key: 'billing_key.issue',
  charge: 'charge',
  cancel: 'cancel',
  destroy_billing_key: 'billing_key.revoke',
  payment: 'payment',
  send_otp: 'otp.request',
  resend_otp: 'otp.resend',
  confirm_otp: 'otp.confirm',
  shipping_start: 'escrow.ship',
  escrow_status: 'escrow.status',
  escrow_notification: 'escrow.notify',
} as const;
export type FaultOperation = keyof typeof FAULT_OPERATION_WIRE;

/**
 * timeout: held past paygate's timeout, then done; error: HTTP 500, nothing done; lost_response: done, no answer;
 * decline: refused by the card issuer, nothing done
 */
export const FAULT_KIND_WIRE = {
  timeout: 'late',
  error: '500',
  lost_response: 'lost_response',
  drop: 'drop',
  decline: 'decline',
} as const;
export type FaultKind = keyof typeof FAULT_KIND_WIRE;

export interface ArmedSandboxFault {
  readonly faultId: string;
  readonly pg: string;
  readonly operation: FaultOperation;
  readonly fault: FaultKind;
  readonly count: number;
  readonly remaining: number;
  readonly createdAt: Date;
}

const wireFault = z.object({
  fault_id: z.string(),
  operation: z.string(),
  fault: z.string(),
  count: z.number().int(),
  remaining: z.number().int(),
  pg: z.string().nullable(),
  created_at: z.iso.datetime({ offset: true }),
});

const reverse = <T extends Record<string, string>>(map: T): ReadonlyMap<string, keyof T> =>
  new Map(Object.entries(map).map(([name, wire]) => [wire, name as keyof T]));
const OPERATION_BY_WIRE = reverse(FAULT_OPERATION_WIRE);
const KIND_BY_WIRE = reverse(FAULT_KIND_WIRE);

/** A merchant's view of a fault; undefined for faults armed in another vocabulary (paygate's own tests). */
function fromWire(f: z.infer<typeof wireFault>): ArmedSandboxFault | undefined {
  const operation = OPERATION_BY_WIRE.get(f.operation);
  const fault = KIND_BY_WIRE.get(f.fault);
  if (operation === undefined || fault === undefined || f.pg === null) return undefined;
  return {
    faultId: f.fault_id,
    pg: f.pg,
    operation,
    fault,
    count: f.count,
    remaining: f.remaining,
    createdAt: new Date(f.created_at),
  };
}

async function call(sandbox: SandboxEndpoint, method: 'GET' | 'POST' | 'DELETE', url: URL, body?: unknown): Promise<unknown> {
  let status: number;
  let json: unknown;
  try {
    const res = await request(url, {
      method,
      headers: {
        authorization: `Bearer ${sandbox.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? null : JSON.stringify(body),
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS,
    });
    status = res.statusCode;
    json = await res.body.json().catch(() => undefined);
  } catch (err) {
    throw new GatewayUnavailableError('sandbox faults unreachable', { cause: err });
  }
  if (status !== 200) throw new GatewayUnavailableError(`sandbox faults: HTTP ${status}`);
  return json;
}

/** Arms `count` uses of a fault on the merchant's calls of `operation` to `pg`. */
export async function armSandboxFault(
  sandbox: SandboxEndpoint,
  spec: { merchantId: string; pg: string; operation: FaultOperation; fault: FaultKind; count: number },
): Promise<ArmedSandboxFault> {
  const answer = z.object({ fault: wireFault }).safeParse(
    await call(sandbox, 'POST', new URL('/_sandbox/faults', sandbox.url), {
      operation: FAULT_OPERATION_WIRE[spec.operation],
      fault: FAULT_KIND_WIRE[spec.fault],
      count: spec.count,
      merchant_id: spec.merchantId,
      pg: spec.pg,
    }),
  );
  const armed = answer.success ? fromWire(answer.data.fault) : undefined;
  if (armed === undefined) throw new GatewayUnavailableError('sandbox faults: unexpected response shape');
  return armed;
}

/** The merchant's armed faults, oldest first. */
export async function listSandboxFaults(sandbox: SandboxEndpoint, merchantId: string): Promise<ArmedSandboxFault[]> {
  const url = new URL('/_sandbox/faults', sandbox.url);
  url.searchParams.set('merchant_id', merchantId);
  const answer = z.object({ list: z.array(wireFault) }).safeParse(await call(sandbox, 'GET', url));
  if (!answer.success) throw new GatewayUnavailableError('sandbox faults: unexpected response shape');
  return answer.data.list.flatMap((f) => fromWire(f) ?? []);
}

/** Disarms the merchant's faults; answers how many were armed. */
export async function disarmSandboxFaults(sandbox: SandboxEndpoint, merchantId: string): Promise<number> {
  const url = new URL('/_sandbox/faults', sandbox.url);
  url.searchParams.set('merchant_id', merchantId);
  const answer = z.object({ disarmed: z.number().int() }).safeParse(await call(sandbox, 'DELETE', url));
  if (!answer.success) throw new GatewayUnavailableError('sandbox faults: unexpected response shape');
  return answer.data.disarmed;
}
