// Merchant clients that behave like real ones: every call is retried after a network error, a 5xx, 9409
// (in progress) or 9503 (not ready) with the same Idempotency-Key / order_id / cancel_id, after a backoff, until a
// final answer or the flow's deadline. The flows record what they asked for, so the checks can compare it with
// paygate's database and the sandbox PG's own records.
import { randomBytes } from 'node:crypto';
import type { Pool } from 'undici';

export interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  /** the body parsed as JSON (an empty or unparsable one did not) */
  readonly json: boolean;
}

/** One answer the merchant got from paygate (or the network error instead), for the checks of answers. */
export interface ObservedAnswer {
  readonly method: string;
  readonly path: string;
  readonly flow: number;
  /** when the request was sent and when it ended (ms since epoch) */
  readonly sentAt: number;
  readonly endedAt: number;
  readonly answer?: Answer;
  readonly error?: string;
}

/** Where a flow's calls go: paygate (the merchant's own keys), or the provider's side of a relay. */
export interface Endpoint {
  readonly pool: Pool;
  readonly auth: string;
}

export type FlowKind =
  | 'charge_idempotent'
  | 'charge_plain'
  | 'cancel_partial'
  | 'cancel_full'
  | 'verification'
  | 'webhook_test'
  | 'escrow'
  | 'reserve'
  | 'schedule';

/** Share of each flow in a run (weights). */
export const FLOW_MIX: Readonly<Record<FlowKind, number>> = {
  charge_idempotent: 24,
  charge_plain: 14,
  cancel_partial: 10,
  cancel_full: 10,
  verification: 14,
  webhook_test: 12,
  escrow: 8,
  reserve: 4,
  schedule: 4,
};

/** What one flow did, for the checks. */
export interface FlowRecord {
  readonly index: number;
  readonly kind: FlowKind;
  /** order_ids whose charge the merchant asked for (a schedule's period 1 and a reserve included) */
  readonly orderIds: string[];
  receiptId?: string;
  /** amount of the cancel asked for */
  cancelPrice?: number;
  reserveId?: string;
  scheduleId?: string;
  deliveryId?: string;
  /** the final answer's HTTP status and error code when it was an error (a final refusal) */
  final?: { status: number; code?: number };
  /** the merchant gave up (deadline) before a final answer */
  gaveUp?: string;
  /** calls retried (network error, 5xx, 9409, 9503) */
  retries: number;
  /** an escrow flow's buyer decision at the PG and the escrow status it leads to */
  escrowDecision?: { readonly events: readonly string[]; readonly status: number };
  /** a verification whose confirm retry answered 2404 while the first confirm had verified it */
  confirmRetriedAfterSuccess?: boolean;
  /** the flow's call in progress and its last temporary answer (progress reports) */
  current?: string;
}

export interface MerchantContext {
  readonly pool: Pool;
  readonly auth: string;
  readonly billingKey: string;
  readonly random: () => number;
  /** when a flow stops retrying (ms since epoch) */
  readonly deadline: number;
  /**
   * Where the PG's side of a flow happens (the SMS inbox, an escrow payment in the payment window, the buyer's
   * decision): paygate's own sandbox by default, the provider's when paygate relays to one.
   */
  readonly pgSide?: Endpoint;
  /** the escrow PG of the payments (default sandbox_escrow_b) */
  readonly escrowPg?: string;
  /** escrow flows end with the buyer's decision at the PG (a confirmation, or a rejection and its approval) */
  readonly buyerDecisions?: boolean;
  /** catalog codes a 5xx carries that the merchant takes as a final refusal (the spec's refusals at 500), not retried */
  readonly finalAt5xx?: ReadonlySet<number>;
  /** every answer of paygate, or the network error instead (not those of the PG's side) */
  readonly onAnswer?: (observed: ObservedAnswer) => void;
}

const RETRY_CODES = new Set([9409, 9503]);

class GaveUp extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One request, no retry: the answer, or the network error thrown. */
export async function request(
  pool: Pool,
  auth: string,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await pool.request({
    method,
    path,
    headers: {
      authorization: auth,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    headersTimeout: 90_000,
    bodyTimeout: 90_000,
  });
  const text = await res.body.text();
  let parsed: Record<string, unknown> = {};
  let json = false;
  try {
    const value = JSON.parse(text) as unknown;
    json = true;
    parsed = value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : { value };
  } catch {
    parsed = { text: text.slice(0, 200) };
  }
  return { status: res.statusCode, body: parsed, json };
}

/** The call retried like a real merchant until a final answer (any 2xx or a refusal that is not temporary). */
async function call(
  ctx: MerchantContext,
  flow: FlowRecord,
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  at?: Endpoint,
): Promise<Answer> {
  let backoff = 250;
  flow.current = `${method} ${path}`;
  const { pool, auth } = at ?? ctx;
  const observe = at ? undefined : ctx.onAnswer;
  for (;;) {
    let temporary: string;
    const sentAt = Date.now();
    try {
      const answer = await request(pool, auth, method, path, body, headers);
      observe?.({ method, path, flow: flow.index, sentAt, endedAt: Date.now(), answer });
      const code = typeof answer.body.code === 'number' ? answer.body.code : undefined;
      const finalRefusal = code !== undefined && ctx.finalAt5xx?.has(code) === true;
      if ((answer.status < 500 || finalRefusal) && !(code !== undefined && RETRY_CODES.has(code)) && answer.status !== 429)
        return answer;
      temporary = `HTTP ${answer.status} ${code ?? ''}`;
    } catch (err) {
      temporary = (err as Error).message;
      observe?.({ method, path, flow: flow.index, sentAt, endedAt: Date.now(), error: temporary });
    }
    if (Date.now() > ctx.deadline) throw new GaveUp(`${method} ${path}: ${temporary}`);
    flow.retries++;
    flow.current = `${method} ${path}: ${temporary}`;
    await sleep(backoff + ctx.random() * backoff);
    backoff = Math.min(backoff * 2, 5_000);
  }
}

const ok = (a: Answer) => a.status >= 200 && a.status < 300;
const codeOf = (a: Answer) => (typeof a.body.code === 'number' ? a.body.code : undefined);
const key = () => `chaos-${randomBytes(8).toString('hex')}`;

/** ISO 8601 in Asia/Seoul (+09:00), as the spec's timestamps are written. */
export function kst(ms: number): string {
  return `${new Date(ms + 9 * 3_600_000).toISOString().slice(0, 19)}+09:00`;
}

async function charge(ctx: MerchantContext, flow: FlowRecord, idempotent: boolean, price: number): Promise<Answer> {
  const orderId = key();
  flow.orderIds.push(orderId);
  const answer = await call(
    ctx,
    flow,
    'POST',
    '/v2/subscribe/payment',
    { billing_key: ctx.billingKey, order_name: 'chaos', order_id: orderId, price },
    idempotent ? { 'idempotency-key': key() } : {},
  );
  if (ok(answer)) flow.receiptId = answer.body.receipt_id as string;
  return answer;
}

async function runFlow(ctx: MerchantContext, flow: FlowRecord): Promise<void> {
  const finish = (a: Answer) => {
    const code = codeOf(a);
    flow.final = { status: a.status, ...(code === undefined ? {} : { code }) };
  };
  switch (flow.kind) {
    case 'charge_idempotent':
    case 'charge_plain': {
      // a plain retry of an order_id that went through is 9410: the merchant then knows it exists
      finish(await charge(ctx, flow, flow.kind === 'charge_idempotent', 1000 + Math.floor(ctx.random() * 50) * 100));
      return;
    }
    case 'cancel_partial':
    case 'cancel_full': {
      const charged = await charge(ctx, flow, true, 5000);
      if (!ok(charged)) return finish(charged);
      flow.cancelPrice = flow.kind === 'cancel_full' ? 5000 : 1000 + Math.floor(ctx.random() * 30) * 100;
      const cancelId = key();
      finish(
        await call(
          ctx,
          flow,
          'POST',
          '/v2/cancel',
          { receipt_id: flow.receiptId, cancel_price: flow.cancelPrice, cancel_id: cancelId },
          { 'idempotency-key': key() },
        ),
      );
      return;
    }
    case 'verification': {
      const phone = `010${String(20_000_000 + Math.floor(ctx.random() * 79_999_999))}`;
      const request = () =>
        call(
          ctx,
          flow,
          'POST',
          '/v2/request/authentication',
          {
            pg: 'sandbox_identity',
            method: '본인인증',
            order_name: 'chaos',
            authentication_id: key(),
            username: '홍길동',
            identity_no: '9001011',
            phone,
            carrier: 'SKT',
          },
          { 'idempotency-key': key() },
        );
      let requested = await request();
      // 2401 (creating the request failed: the gateway could not send it) leaves nothing to confirm; the user asks
      // for a code again, a new request, after a while longer each time (an outage can last a minute)
      for (let wait = 1_000; codeOf(requested) === 2401; wait = Math.min(wait * 2, 15_000)) {
        flow.retries++;
        await sleep(wait + ctx.random() * wait);
        if (Date.now() > ctx.deadline) throw new GaveUp('every verification request failed (2401)');
        requested = await request();
      }
      if (!ok(requested)) return finish(requested);
      flow.receiptId = requested.body.receipt_id as string;
      // the SMS reaches the inbox once the workflow sent it; a user reads it, then types it in
      let otp: string | undefined;
      while (otp === undefined) {
        const inbox = await call(ctx, flow, 'GET', `/sandbox/v1/sms?phone=${phone}`, undefined, {}, ctx.pgSide);
        // newest first; the phone is this flow's own
        const list = (inbox.body.list ?? []) as { otp: string }[];
        otp = list[0]?.otp;
        if (otp === undefined) {
          flow.current = `waiting for the OTP in the inbox (${list.length} messages)`;
          if (Date.now() > ctx.deadline) throw new GaveUp('the OTP never reached the inbox');
          await sleep(500);
        }
      }
      const confirmed = await call(
        ctx,
        flow,
        'POST',
        '/v2/authenticate/confirm',
        { receipt_id: flow.receiptId, otp },
        { 'idempotency-key': key() },
      );
      if (codeOf(confirmed) === 2404) {
        // 2404 (not awaiting confirmation): a retry of a confirm that went through before its answer was lost (the
        // API died; the key's in-flight record was taken over) — the merchant looks the verification up
        const certificate = await call(ctx, flow, 'GET', `/v2/certificate/${flow.receiptId}`);
        if (ok(certificate) && certificate.body.status === 12) {
          flow.confirmRetriedAfterSuccess = true;
          return finish(certificate);
        }
      }
      return finish(confirmed);
    }
    case 'webhook_test': {
      const sent = await call(ctx, flow, 'POST', '/message/alimtalk/webhook/test', undefined, { 'idempotency-key': key() });
      if (ok(sent)) flow.deliveryId = sent.body.delivery_id as string;
      return finish(sent);
    }
    case 'escrow': {
      const orderId = key();
      const paid = await call(
        ctx,
        flow,
        'POST',
        '/sandbox/v1/payments',
        { pg: ctx.escrowPg ?? 'sandbox_escrow_b', price: 10_000, order_id: orderId, order_name: 'chaos', escrow: true },
        { 'idempotency-key': key() },
        ctx.pgSide,
      );
      if (!ok(paid)) return finish(paid);
      flow.receiptId = paid.body.receipt_id as string;
      const shipped = await call(ctx, flow, 'PUT', `/v2/escrow/shipping/start/${flow.receiptId}`, {
        tracking_number: `T${randomBytes(5).toString('hex')}`,
        delivery_corp: 'CJ대한통운',
      });
      // 2700: shipping already started (a retry of a call whose answer was lost)
      if (codeOf(shipped) !== 2700 && !ok(shipped)) return finish(shipped);
      if (ctx.buyerDecisions) {
        // the buyer acts at the PG: confirms, or rejects and the merchant approves (the PG refunds)
        flow.escrowDecision =
          ctx.random() < 0.6
            ? { events: ['purchase_confirmed'], status: 1 }
            : { events: ['purchase_rejected', 'rejection_approved'], status: -3 };
        for (const event of flow.escrowDecision.events) {
          const acted = await call(
            ctx,
            flow,
            'POST',
            `/sandbox/v1/escrow/${flow.receiptId}/events`,
            { event },
            { 'idempotency-key': key() },
            ctx.pgSide,
          );
          if (!ok(acted)) return finish(acted);
        }
      }
      return finish({ status: 200, body: {}, json: true });
    }
    case 'reserve': {
      const orderId = key();
      flow.orderIds.push(orderId);
      const reserved = await call(
        ctx,
        flow,
        'POST',
        '/v2/subscribe/payment/reserve',
        {
          billing_key: ctx.billingKey,
          order_id: orderId,
          order_name: 'chaos reserve',
          price: 3000,
          // due within the run: the timer fires while processes are being killed
          reserve_execute_at: kst(Date.now() + 20_000 + Math.floor(ctx.random() * 40_000)),
        },
        { 'idempotency-key': key() },
      );
      if (ok(reserved)) flow.reserveId = reserved.body.reserve_id as string;
      return finish(reserved);
    }
    case 'schedule': {
      const created = await call(
        ctx,
        flow,
        'POST',
        '/v2/subscribe/schedules',
        { billing_key: ctx.billingKey, order_name: 'chaos schedule', price: 2000, interval: 'month' },
        { 'idempotency-key': key() },
      );
      if (ok(created)) {
        flow.scheduleId = created.body.schedule_id as string;
        // period 1 is charged at once (start_at defaults to now) with this order_id
        flow.orderIds.push(`${flow.scheduleId}-1`);
      }
      return finish(created);
    }
  }
}

/** Runs one flow to its final answer (or the deadline); never throws. */
export async function driveFlow(ctx: MerchantContext, flow: FlowRecord): Promise<void> {
  try {
    await runFlow(ctx, flow);
    flow.current = undefined;
  } catch (err) {
    flow.gaveUp = err instanceof GaveUp ? err.message : `unexpected: ${(err as Error).stack ?? String(err)}`;
  }
}

/** Picks the flow kinds of a run from the mix with the run's random source. */
export function pickKinds(
  count: number,
  random: () => number,
  mix: Readonly<Partial<Record<FlowKind, number>>> = FLOW_MIX,
): FlowKind[] {
  const entries = Object.entries(mix) as [FlowKind, number][];
  const total = entries.reduce((s, [, w]) => s + w, 0);
  return Array.from({ length: count }, () => {
    let r = random() * total;
    for (const [kind, weight] of entries) {
      r -= weight;
      if (r < 0) return kind;
    }
    return entries[0]![0];
  });
}
