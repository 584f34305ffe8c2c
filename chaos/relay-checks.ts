// The relay chaos run's checks: the relay A's database against the provider B's database and B's sandbox PG journal
// (B's own charge and refund checks of chaos/checks.ts), what the merchant was told against both, the merchant's
// webhooks, and every answer the merchant got from A. Every count must be 0.
import type pg from 'pg';
import {
  describeWorkflow,
  openDb,
  pgChargeChecks,
  pgRefundChecks,
  sandboxInspector,
  stuckRows,
  workflowCounts,
} from './checks.js';
import type { FlowRecord, ObservedAnswer } from './merchant.js';
import type { ReceiverLog } from './receiver.js';

export interface RelayCounts {
  stuck: number;
  lost: number;
  duplicatedAtProvider: number;
  cancelMismatch: number;
  receiptMismatch: number;
  escrowMismatch: number;
  duplicatedWebhooks: number;
  webhooksLost: number;
  answersWithoutCode: number;
  nonFinalWithoutHint: number;
  refusalsOfValidRequests: number;
  noAnswer: number;
  failedWorkflows: number;
  refused: number;
}

export interface RelayCheckReport {
  readonly counts: RelayCounts;
  readonly details: Record<string, number>;
  readonly examples: string[];
}

export interface RelayCheckTarget {
  readonly relay: { readonly databaseUrl: string; readonly engineAddress: string; readonly applicationId: string };
  readonly provider: {
    readonly databaseUrl: string;
    readonly engineAddress: string;
    readonly applicationId: string;
    readonly sandboxUrl: string;
    readonly sandboxToken: string;
  };
  readonly flows: readonly FlowRecord[];
  readonly answers: readonly ObservedAnswer[];
  /** when A's API was killed and not yet listening again */
  readonly apiDown: readonly { readonly from: number; readonly to: number }[];
  readonly receiver: ReceiverLog;
}

/**
 * The catalog's refusals the spec answers with HTTP 500 (src/platform/errors.ts REFUSALS_ANSWERED_5XX: the PG judged
 * the request and said no): final answers, not outages. The chaos suite reads paygate over HTTP only, hence the copy.
 */
export const REFUSAL_CODES_AT_500: ReadonlySet<number> = new Set([2301, 2401, 2405, 2411, 2701]);

/**
 * The refusals a merchant of the suite never earns: it confirms with the OTP its inbox received, resends once, and
 * starts shipping of an order paid and waiting (a retry after a lost answer is 2700 or 2404, not these). Such an
 * answer would say "your request is wrong" about an outage, which paygate answers 9502 / 9504 / 9481 instead. 2401 is
 * not among them: a verification request the provider did not take leaves nothing behind, and the merchant asks again
 * (chaos/merchant.ts).
 */
const REFUSALS_OF_VALID_REQUESTS = new Set([2405, 2411, 2701]);

/** An answer whose outcome is not known yet: a 5xx other than a refusal, or 9409 (the first request still running). */
export function isNonFinal(status: number, body: Record<string, unknown>): boolean {
  const code = typeof body.code === 'number' ? body.code : undefined;
  return (status >= 500 && !(code !== undefined && REFUSAL_CODES_AT_500.has(code))) || code === 9409;
}

/** The answer says how to learn the outcome: the receipt_id to look up, or to retry with the same key / order_id. */
export function tellsHowToLearnOutcome(body: Record<string, unknown>): boolean {
  if (typeof body.receipt_id === 'string' && body.receipt_id !== '') return true;
  const payload = body.payload as { message?: unknown } | undefined;
  const messages = [body.message, payload?.message].filter((m): m is string => typeof m === 'string');
  return messages.some((m) => /\bretry\b/i.test(m) && /\bsame\s+(order_id|idempotency[- ]key|cancel_id)/i.test(m));
}

/** An error body of the catalog: a numeric code and its error_code name. */
export function hasCatalogCode(body: Record<string, unknown>): boolean {
  return typeof body.code === 'number' && typeof body.error_code === 'string' && body.error_code !== '';
}

/** What a webhook was about: two webhook-ids with the same subject are one event delivered twice. */
export function webhookSubject(raw: string): string | undefined {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const receipt = (body.receipt ?? {}) as Record<string, unknown>;
  const escrow = (body.escrow_data ?? receipt.escrow_data ?? {}) as Record<string, unknown>;
  const cancel = (body.cancel ?? {}) as Record<string, unknown>;
  return JSON.stringify([
    body.webhook_type ?? null,
    body.event ?? null,
    body.operation ?? null,
    body.outcome ?? null,
    body.receipt_id ?? receipt.receipt_id ?? null,
    body.order_id ?? receipt.order_id ?? null,
    body.schedule_id ?? null,
    body.reserve_id ?? null,
    body.status ?? receipt.status ?? null,
    body.cancelled_price ?? receipt.cancelled_price ?? null,
    cancel.cancel_id ?? null,
    escrow.status ?? null,
  ]);
}

interface ReceiptRow {
  receipt_id: string;
  order_id: string;
  status: number;
  price: string;
  cancelled_price: string;
}

async function receiptsOf(db: pg.Client, applicationId: string): Promise<ReceiptRow[]> {
  return (
    await db.query<ReceiptRow>(
      // the id the merchant is given: the provider's for a relayed receipt (A keeps its own beside it), B's own at B
      `select coalesce(provider_receipt_id, receipt_id) as receipt_id, order_id, status, price::text, cancelled_price::text
         from receipts where application_id = $1`,
      [applicationId],
    )
  ).rows;
}

/** By the receipt_id the merchant is given (the provider's for a relayed record, whose own id A keeps beside it). */
export async function statusById(db: pg.Client, table: 'verifications' | 'escrow_orders', applicationId: string) {
  const query =
    table === 'verifications'
      ? 'select coalesce(provider_receipt_id, receipt_id) as receipt_id, status from verifications where application_id = $1'
      : `select coalesce(r.provider_receipt_id, e.receipt_id) as receipt_id, e.status
           from escrow_orders e join receipts r on r.receipt_id = e.receipt_id where e.application_id = $1`;
  const rows = (await db.query<{ receipt_id: string; status: number }>(query, [applicationId])).rows;
  return new Map(rows.map((r) => [r.receipt_id, r.status]));
}

export async function runRelayChecks(target: RelayCheckTarget): Promise<RelayCheckReport> {
  const { flows, answers, receiver } = target;
  const counts: RelayCounts = {
    stuck: 0,
    lost: 0,
    duplicatedAtProvider: 0,
    cancelMismatch: 0,
    receiptMismatch: 0,
    escrowMismatch: 0,
    duplicatedWebhooks: 0,
    webhooksLost: 0,
    answersWithoutCode: 0,
    nonFinalWithoutHint: 0,
    refusalsOfValidRequests: 0,
    noAnswer: 0,
    failedWorkflows: 0,
    refused: 0,
  };
  const details: Record<string, number> = {};
  const examples: string[] = [];
  // a few examples of each kind, so one flood does not hide the others
  const perKind = new Map<string, number>();
  const note = (kind: keyof RelayCounts, line: string) => {
    const n = perKind.get(kind) ?? 0;
    perKind.set(kind, n + 1);
    if (n < 5) examples.push(`[${kind}] ${line}`);
  };
  const count = (kind: keyof RelayCounts, line: string) => {
    counts[kind]++;
    note(kind, line);
  };

  const dbA = await openDb(target.relay.databaseUrl);
  const dbB = await openDb(target.provider.databaseUrl);
  const sandboxB = sandboxInspector(target.provider.sandboxUrl, target.provider.sandboxToken);
  try {
    // ---- stuck at A: rows not final, flows without a final answer
    const rows = await stuckRows(dbA);
    for (const [k, n] of Object.entries(rows)) {
      details[`A: ${k}`] = n;
      counts.stuck += n;
      if (n > 0) note('stuck', `A: ${k}: ${n}`);
    }
    for (const f of flows.filter((f) => f.gaveUp !== undefined))
      count('stuck', `flow ${f.index} (${f.kind}) gave up: ${f.gaveUp}`);
    const atBRows = await stuckRows(dbB);
    for (const [k, n] of Object.entries(atBRows)) details[`B: ${k}`] = n;

    // ---- refused: a good card and well-formed requests end in a success (9410: a plain charge's earlier attempt went through)
    for (const f of flows) {
      if (f.final && f.final.status >= 300 && !(f.kind === 'charge_plain' && f.final.code === 9410)) {
        count('refused', `flow ${f.index} (${f.kind}) ended with HTTP ${f.final.status} code ${f.final.code}`);
        const key = `flows refused: ${f.kind} ${f.final.code ?? f.final.status}`;
        details[key] = (details[key] ?? 0) + 1;
      }
    }

    // ---- B's own books: each order charged at most once, each cancel applied once (its sandbox PG's journal)
    const atB = await pgChargeChecks(dbB, sandboxB.get, target.provider.applicationId, flows, (l) =>
      note('duplicatedAtProvider', `B: ${l}`),
    );
    counts.duplicatedAtProvider += atB.duplicated;
    counts.lost += atB.lost;
    details['B: PG charges'] = atB.pgCharges;
    details['B: paid card receipts'] = atB.paidReceipts;
    const refundsB = await pgRefundChecks(dbB, sandboxB.get, target.provider.applicationId, (l) =>
      note('cancelMismatch', `B: ${l}`),
    );
    counts.cancelMismatch += refundsB.mismatches;
    details['B: PG refunded (KRW)'] = refundsB.refunded;

    // ---- A's receipts against B's, by the provider's receipt_id
    const receiptsA = await receiptsOf(dbA, target.relay.applicationId);
    const receiptsB = await receiptsOf(dbB, target.provider.applicationId);
    const bById = new Map(receiptsB.map((r) => [r.receipt_id, r]));
    const aByOrder = new Map(receiptsA.map((r) => [r.order_id, r]));
    const bByOrder = new Map(receiptsB.map((r) => [r.order_id, r]));
    for (const r of receiptsA.filter((r) => r.status !== 0)) {
      const other = bById.get(r.receipt_id);
      if (!other || other.status !== r.status || other.price !== r.price || other.cancelled_price !== r.cancelled_price) {
        count(
          'receiptMismatch',
          `receipt ${r.receipt_id} (order ${r.order_id}): A status ${r.status} price ${r.price} cancelled ${r.cancelled_price}; ` +
            (other
              ? `B status ${other.status} price ${other.price} cancelled ${other.cancelled_price}`
              : 'B has no such receipt'),
        );
      }
    }
    details['A: receipts'] = receiptsA.length;
    details['B: receipts'] = receiptsB.length;

    // ---- lost: what the merchant was told succeeded exists, final, at both
    const verifiedA = await statusById(dbA, 'verifications', target.relay.applicationId);
    const verifiedB = await statusById(dbB, 'verifications', target.provider.applicationId);
    const escrowA = await statusById(dbA, 'escrow_orders', target.relay.applicationId);
    const escrowB = await statusById(dbB, 'escrow_orders', target.provider.applicationId);
    for (const f of flows.filter((f) => f.final !== undefined && f.final.status < 300)) {
      for (const orderId of f.orderIds) {
        const atA = aByOrder.get(orderId);
        const atB = bByOrder.get(orderId);
        if (!atA || atA.status <= 0 || !atB || atB.status <= 0)
          count('lost', `flow ${f.index} (${f.kind}) order ${orderId}: A ${atA?.status ?? 'none'}, B ${atB?.status ?? 'none'}`);
      }
      if (f.kind === 'verification' && f.receiptId) {
        if (verifiedA.get(f.receiptId) !== 12 || verifiedB.get(f.receiptId) !== 12)
          count(
            'lost',
            `verification ${f.receiptId} confirmed to the merchant: A ${verifiedA.get(f.receiptId)}, B ${verifiedB.get(f.receiptId)}`,
          );
      }
      if (f.kind === 'cancel_partial' || f.kind === 'cancel_full') {
        const atA = f.receiptId ? receiptsA.find((r) => r.receipt_id === f.receiptId) : undefined;
        const atB = f.receiptId ? bById.get(f.receiptId) : undefined;
        if (Number(atA?.cancelled_price) !== f.cancelPrice || Number(atB?.cancelled_price) !== f.cancelPrice)
          count(
            'cancelMismatch',
            `cancel flow ${f.index} asked ${f.cancelPrice}: A shows ${atA?.cancelled_price ?? 'nothing'}, B ${atB?.cancelled_price ?? 'nothing'}`,
          );
      }
      if (f.kind === 'escrow' && f.receiptId && f.escrowDecision) {
        if (escrowB.get(f.receiptId) !== f.escrowDecision.status)
          count(
            'lost',
            `escrow ${f.receiptId}: the buyer's ${f.escrowDecision.events.join(', ')}; B's order ${escrowB.get(f.receiptId)}`,
          );
      }
    }
    // B's notifications to A it has not had a 2xx for (still on B's retry ladder), by receipt
    const unsent = new Set(
      (
        await dbB.query<{ tags: unknown }>(`select tags from webhook_deliveries where status <> 'done' and application_id = $1`, [
          target.provider.applicationId,
        ])
      ).rows.flatMap((r) => (Array.isArray(r.tags) ? r.tags.map(String) : [])),
    );
    let waitingOnB = 0;
    let described = 0;
    for (const [receiptId, status] of escrowA) {
      if (escrowB.get(receiptId) !== status) {
        const pending = unsent.has(receiptId);
        if (pending) waitingOnB++;
        count(
          'escrowMismatch',
          `escrow ${receiptId}: A's order ${status}, B's ${escrowB.get(receiptId) ?? 'none'}${pending ? " (B's notification to A still retrying)" : ''}`,
        );
        // A's run of the order, as its engine sees it (A's workflow is named by A's own receipt_id)
        if (described++ < 5) {
          const own = (
            await dbA.query<{ receipt_id: string }>(
              'select receipt_id from receipts where provider_receipt_id = $1 or receipt_id = $1 limit 1',
              [receiptId],
            )
          ).rows[0]?.receipt_id;
          if (own)
            examples.push(`  A's run of ${receiptId}: ${await describeWorkflow(target.relay.engineAddress, `escrow:${own}`)}`);
        }
      }
    }
    details['escrow mismatches whose B notification to A is still retrying'] = waitingOnB;
    details['A: escrow orders'] = escrowA.size;

    // ---- webhooks: every delivery A recorded was accepted; no event reached the merchant under two ids
    const deliveries = (
      await dbA.query<{ delivery_id: string; status: string }>('select delivery_id, status from webhook_deliveries')
    ).rows;
    for (const d of deliveries)
      if (!receiver.accepted.has(d.delivery_id)) count('webhooksLost', `delivery ${d.delivery_id} (${d.status}) never accepted`);
    const bySubject = new Map<string, string[]>();
    for (const id of receiver.accepted) {
      const subject = webhookSubject(receiver.bodies.get(id) ?? '');
      if (subject === undefined) continue;
      bySubject.set(subject, [...(bySubject.get(subject) ?? []), id]);
    }
    for (const [subject, ids] of bySubject)
      if (ids.length > 1) count('duplicatedWebhooks', `${ids.length} webhook-ids (${ids.join(', ')}) for ${subject}`);
    details['A: webhook deliveries'] = deliveries.length;
    details['webhook ids accepted by the merchant'] = receiver.accepted.size;

    // ---- every answer of A: JSON, a catalog code on errors, a way to learn the outcome when not final
    const nonFinalByCode: Record<string, number> = {};
    let excused = 0;
    for (const o of answers) {
      const what = `${o.method} ${o.path} (flow ${o.flow})`;
      if (o.answer) {
        const { status, body, json } = o.answer;
        if (!json || (status >= 400 && !hasCatalogCode(body))) {
          count('answersWithoutCode', `${what}: HTTP ${status} ${JSON.stringify(body).slice(0, 160)}`);
          continue;
        }
        if (typeof body.code === 'number' && REFUSALS_OF_VALID_REQUESTS.has(body.code))
          count('refusalsOfValidRequests', `${what}: HTTP ${status} ${body.code} "${String(body.message).slice(0, 120)}"`);
        if (isNonFinal(status, body)) {
          const key = `${status}/${body.code}`;
          nonFinalByCode[key] = (nonFinalByCode[key] ?? 0) + 1;
          if (!tellsHowToLearnOutcome(body))
            count('nonFinalWithoutHint', `${what}: HTTP ${status} ${body.code} "${String(body.message).slice(0, 120)}"`);
        }
      } else {
        // a network error is the API's death when it overlaps a kill of A's API (1 s either side); otherwise the
        // running API closed the connection without an answer, or held it past the merchant's 90 s
        const duringKill = target.apiDown.some((d) => o.sentAt <= d.to + 1_000 && o.endedAt >= d.from - 1_000);
        if (duringKill) excused++;
        else count('noAnswer', `${what}: ${o.error} after ${((o.endedAt - o.sentAt) / 1000).toFixed(1)} s`);
      }
    }
    details['answers from A'] = answers.length;
    const took = answers.filter((o) => o.answer).map((o) => o.endedAt - o.sentAt);
    details['slowest answer of A (s)'] = Math.round(Math.max(0, ...took) / 1000);
    details['answers of A after more than 30 s'] = took.filter((ms) => ms > 30_000).length;
    details['network errors while A’s API was killed'] = excused;
    for (const [k, n] of Object.entries(nonFinalByCode)) details[`non-final answers HTTP ${k}`] = n;

    // ---- failed workflows, at A and at B
    const wfA = await workflowCounts(target.relay.engineAddress, (l) => note('failedWorkflows', `A: ${l}`));
    const wfB = await workflowCounts(target.provider.engineAddress, (l) => note('failedWorkflows', `B: ${l}`));
    counts.failedWorkflows = wfA.failed + wfB.failed;
    details['A: workflows running at the end'] = wfA.running;
    details['B: workflows running at the end'] = wfB.running;
  } finally {
    await dbA.end().catch(() => undefined);
    await dbB.end().catch(() => undefined);
    await sandboxB.close();
  }
  return { counts, details, examples };
}
