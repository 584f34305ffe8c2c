// The end-of-run checks: paygate's database (read directly, the run's schema) against the sandbox PG's own
// records (its internal inspection routes) and the receiver's log, plus the engine's visibility for failed
// workflows. Every count here except the informational ones must be 0.
import { Client as TemporalClient, Connection } from '@temporalio/client';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import pg from 'pg';
import { Pool } from 'undici';
import { pgChargeKey } from '../src/payments/charges.js';
import type { FlowRecord } from './merchant.js';
import type { ReceiverLog } from './receiver.js';

export interface Counts {
  /** flows whose merchant gave up, and rows left in a non-final state */
  stuck: number;
  /** a PG charge with no paid receipt */
  lost: number;
  /** an order charged more than once by the PG, or a paid receipt the PG never charged */
  duplicated: number;
  /** receipts whose refunds differ between paygate and the PG */
  refundMismatch: number;
  /** webhook deliveries never accepted by the receiver */
  webhooksLost: number;
  /** workflows in ExecutionStatus "Failed" */
  failedWorkflows: number;
  /** flows that ended in a refusal a good card and a well-formed request should never get */
  refused: number;
}

export interface CheckReport {
  readonly counts: Counts;
  /** what each stuck count is made of, and informational figures */
  readonly details: Record<string, number>;
  /** up to a few examples of each violation, for the reader */
  readonly examples: string[];
}

export interface CheckTarget {
  readonly databaseUrl: string;
  readonly sandboxUrl: string;
  readonly sandboxToken: string;
  readonly engineAddress: string;
  readonly applicationId: string;
}

/** The database-side stuck figures alone (polled during the settle phase). */
export async function stuckRows(db: pg.Client): Promise<Record<string, number>> {
  const one = async (q: string) => Number((await db.query<{ n: string }>(q)).rows[0]!.n);
  return {
    'receipts in status 0': await one('select count(*) n from receipts where status = 0'),
    'idempotency keys in flight': await one(`select count(*) n from idempotency_keys where state = 'in_flight'`),
    'cancels pending': await one('select count(*) n from receipts where cancel_pending is not null'),
    'deliveries not done': await one(`select count(*) n from webhook_deliveries where status <> 'done'`),
    'verifications sending': await one('select count(*) n from verifications where status = 50'),
    'reserves not paid': await one(`select count(*) n from reserves where status <> 'paid'`),
    'schedule periods not paid': await one(`select count(*) n from schedule_charges where status <> 'paid'`),
  };
}

export async function openDb(databaseUrl: string): Promise<pg.Client> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  return db;
}

/** A GET on the sandbox PGs' internal inspection routes. */
export type SandboxGet = (path: string) => Promise<{ status: number; body: Record<string, unknown> }>;

export function sandboxInspector(sandboxUrl: string, sandboxToken: string): { get: SandboxGet; close(): Promise<void> } {
  const sandbox = new Pool(sandboxUrl, { connections: 8 });
  return {
    get: async (path) => {
      const res = await sandbox.request({ method: 'GET', path, headers: { authorization: `Bearer ${sandboxToken}` } });
      return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
    },
    close: () => sandbox.close(),
  };
}

/**
 * Every order_id the flows asked for or the project's card receipts hold, against the sandbox PG's executions of its
 * keys: charged more than once, or paid without a charge, or with another tid (duplicated); charged but not paid (lost).
 */
export async function pgChargeChecks(
  db: pg.Client,
  sandboxGet: SandboxGet,
  applicationId: string,
  flows: readonly FlowRecord[],
  example: (line: string) => void,
): Promise<{ duplicated: number; lost: number; pgCharges: number; paidReceipts: number }> {
  const found = { duplicated: 0, lost: 0, pgCharges: 0, paidReceipts: 0 };
  const receipts = (
    await db.query<{
      order_id: string;
      status: number;
      gateway_tid: string | null;
      pg_key_attempt: number;
      receipt_id: string;
    }>(
      `select order_id, status, gateway_tid, pg_key_attempt, receipt_id from receipts where pg = 'sandbox_card' and application_id = $1`,
      [applicationId],
    )
  ).rows;
  const byOrder = new Map(receipts.map((r) => [r.order_id, r]));
  const orderIds = new Set([...flows.flatMap((f) => f.orderIds), ...byOrder.keys()]);
  const queue = [...orderIds];
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let orderId = queue.pop(); orderId !== undefined; orderId = queue.pop()) {
        const receipt = byOrder.get(orderId);
        const attempts = receipt?.pg_key_attempt ?? 0;
        let executions = 0;
        let tid: string | null = null;
        for (let a = 0; a <= attempts; a++) {
          const key = pgChargeKey(applicationId, orderId, a);
          const answer = await sandboxGet(`/_sandbox/charges?idempotency_key=${encodeURIComponent(key)}`);
          if (answer.status !== 200) throw new Error(`sandbox charges lookup answered ${answer.status}`);
          const n = Number(answer.body.executions ?? 0);
          executions += n;
          if (n > 0) tid = answer.body.tid as string;
        }
        found.pgCharges += executions;
        const paid = receipt !== undefined && receipt.status > 0;
        if (executions > 1) {
          found.duplicated++;
          example(`order ${orderId}: the PG charged ${executions} times`);
        } else if (executions === 1 && !paid) {
          found.lost++;
          example(
            `order ${orderId}: the PG charged (tid ${tid}) but the receipt is ${receipt ? `status ${receipt.status}` : 'missing'}`,
          );
        } else if (executions === 1 && paid && receipt.gateway_tid !== tid) {
          found.duplicated++;
          example(`order ${orderId}: receipt tid ${receipt.gateway_tid} differs from the PG's ${tid}`);
        } else if (executions === 0 && paid) {
          found.duplicated++;
          example(`order ${orderId}: receipt ${receipt.receipt_id} paid but the PG never charged it`);
        }
      }
    }),
  );
  found.paidReceipts = receipts.filter((r) => r.status > 0).length;
  return found;
}

/** The project's card receipts' cancelled_price and cancel rows against the sandbox PG's cancelled amount. */
export async function pgRefundChecks(
  db: pg.Client,
  sandboxGet: SandboxGet,
  applicationId: string,
  example: (line: string) => void,
): Promise<{
  refunds: { receipt_id: string; gateway_tid: string; cancelled_price: string; cancels: string }[];
  mismatches: number;
  refunded: number;
}> {
  const refunds = (
    await db.query<{ receipt_id: string; gateway_tid: string; cancelled_price: string; cancels: string }>(
      `select r.receipt_id, r.gateway_tid, r.cancelled_price,
              coalesce((select sum(c.amount) from receipt_cancels c where c.receipt_id = r.receipt_id), 0) as cancels
         from receipts r where r.pg = 'sandbox_card' and r.gateway_tid is not null and r.application_id = $1`,
      [applicationId],
    )
  ).rows;
  let refunded = 0;
  let mismatches = 0;
  for (const r of refunds) {
    const state = await sandboxGet(`/_sandbox/charges/${encodeURIComponent(r.gateway_tid)}`);
    const pgCancelled = state.status === 200 ? Number(state.body.cancelled_amount) : 0;
    refunded += pgCancelled;
    if (pgCancelled !== Number(r.cancelled_price) || pgCancelled !== Number(r.cancels)) {
      mismatches++;
      example(
        `receipt ${r.receipt_id}: PG refunded ${pgCancelled}, cancelled_price ${r.cancelled_price}, cancel rows ${r.cancels}`,
      );
    }
  }
  return { refunds, mismatches, refunded };
}

/** Where a finding's workflow histories are written (JSON, as `historyToJSON` writes them). */
const HISTORY_DIR = resolve('test-results', 'chaos');

/**
 * One workflow as the engine sees it, in a line: its status, history length, pending activities (attempt, last
 * failure) and its last history events: what a finding needs to be understood once the processes are gone.
 */
export async function describeWorkflow(engineAddress: string, workflowId: string): Promise<string> {
  const connection = await Connection.connect({ address: engineAddress });
  try {
    const client = new TemporalClient({ connection, namespace: 'default' });
    const handle = client.workflow.getHandle(workflowId);
    const d = await handle.describe();
    const pending = (d.raw.pendingActivities ?? []).map(
      (a) =>
        `${a.activityType?.name ?? '?'} attempt ${a.attempt ?? 0}${a.lastFailure?.message ? ` (${a.lastFailure.message.slice(0, 160)})` : ''}`,
    );
    const history = await handle.fetchHistory();
    const events = history.events ?? [];
    // the whole history (protobuf's JSON), to read or replay once the processes are gone
    const saved = join(HISTORY_DIR, `${workflowId.replace(/[^\w.-]/g, '_')}.json`);
    mkdirSync(HISTORY_DIR, { recursive: true });
    writeFileSync(saved, JSON.stringify(history));
    const last = events.slice(-12).map((e) => {
      const name = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]);
      return `${e.eventId}:${(name ?? String(e.eventType)).replace(/EventAttributes$/, '')}`;
    });
    return `${workflowId}: ${d.status.name}, ${d.historyLength} events; pending [${pending.join('; ')}]; last ${last.join(' ')}; history in ${relative(process.cwd(), saved)}`;
  } catch (err) {
    return `${workflowId}: not described (${(err as Error).message})`;
  } finally {
    await connection.close();
  }
}

/** The engine's workflows by status; a few failed ones named as examples. */
export async function workflowCounts(
  engineAddress: string,
  example: (line: string) => void,
): Promise<{ failed: number; running: number; completed: number }> {
  const connection = await Connection.connect({ address: engineAddress });
  try {
    const client = new TemporalClient({ connection, namespace: 'default' });
    const failed = (await client.workflow.count('ExecutionStatus="Failed"')).count;
    if (failed > 0) {
      let named = 0;
      for await (const w of client.workflow.list({ query: 'ExecutionStatus="Failed"', pageSize: 5 })) {
        example(`workflow ${w.workflowId} failed`);
        if (++named >= 5) break;
      }
    }
    return {
      failed,
      running: (await client.workflow.count('ExecutionStatus="Running"')).count,
      completed: (await client.workflow.count('ExecutionStatus="Completed"')).count,
    };
  } finally {
    await connection.close();
  }
}

export async function runChecks(target: CheckTarget, flows: readonly FlowRecord[], receiver: ReceiverLog): Promise<CheckReport> {
  const details: Record<string, number> = {};
  const examples: string[] = [];
  const example = (line: string) => {
    if (examples.length < 40) examples.push(line);
  };
  const counts: Counts = {
    stuck: 0,
    lost: 0,
    duplicated: 0,
    refundMismatch: 0,
    webhooksLost: 0,
    failedWorkflows: 0,
    refused: 0,
  };
  const db = await openDb(target.databaseUrl);
  const sandbox = sandboxInspector(target.sandboxUrl, target.sandboxToken);
  const sandboxGet = sandbox.get;
  try {
    // ---- stuck
    const rows = await stuckRows(db);
    Object.assign(details, rows);
    const gaveUp = flows.filter((f) => f.gaveUp !== undefined);
    details['flows without a final answer'] = gaveUp.length;
    for (const f of gaveUp.slice(0, 5)) example(`flow ${f.index} (${f.kind}) gave up: ${f.gaveUp}`);
    const verified = flows.filter((f) => f.kind === 'verification' && f.receiptId && f.final?.status === 200);
    const unverified = verified.length
      ? Number(
          (
            await db.query<{ n: string }>('select count(*) n from verifications where receipt_id = any($1) and status <> 12', [
              verified.map((f) => f.receiptId),
            ])
          ).rows[0]!.n,
        )
      : 0;
    details['confirmed verifications not verified'] = unverified;
    const escrowIds = flows.filter((f) => f.kind === 'escrow' && f.final?.status === 200).map((f) => f.receiptId);
    details['escrow orders not shipping'] = escrowIds.length
      ? Number(
          (
            await db.query<{ n: string }>('select count(*) n from escrow_orders where receipt_id = any($1) and status <> 3', [
              escrowIds,
            ])
          ).rows[0]!.n,
        )
      : 0;
    counts.stuck =
      Object.values(rows).reduce((s, n) => s + n, 0) + gaveUp.length + unverified + details['escrow orders not shipping']!;
    for (const r of (
      await db.query<{ receipt_id: string; order_id: string }>(
        'select receipt_id, order_id from receipts where status = 0 limit 5',
      )
    ).rows)
      example(`receipt ${r.receipt_id} (order ${r.order_id}) still in status 0`);
    // 2404 on confirm: the OTP expired; 9410 on a plain charge: the order went through on an earlier attempt
    const refused = flows.filter(
      (f) => f.final !== undefined && f.final.status >= 300 && !(f.kind === 'charge_plain' && f.final.code === 9410),
    );
    counts.refused = refused.length;
    for (const f of refused.slice(0, 5))
      example(`flow ${f.index} (${f.kind}) ended with HTTP ${f.final!.status} code ${f.final!.code}`);
    details['plain charges answered 9410 on a retry'] = flows.filter((f) => f.final?.code === 9410).length;
    details['confirms retried after they verified (2404, then the lookup showed 12)'] = flows.filter(
      (f) => f.confirmRetriedAfterSuccess,
    ).length;

    // ---- lost / duplicated: every order_id asked for or recorded, against the PG's executions of its keys
    const charges = await pgChargeChecks(db, sandboxGet, target.applicationId, flows, example);
    counts.duplicated += charges.duplicated;
    counts.lost += charges.lost;
    details['PG charges'] = charges.pgCharges;
    details['paid card receipts'] = charges.paidReceipts;

    // ---- refunds: paygate's cancelled_price and its cancel rows against the PG's cancelled amount
    const { refunds, mismatches, refunded } = await pgRefundChecks(db, sandboxGet, target.applicationId, example);
    counts.refundMismatch += mismatches;
    const cancelFlows = flows.filter((f) => f.kind.startsWith('cancel_') && f.final?.status === 200);
    for (const f of cancelFlows) {
      const row = refunds.find((r) => r.receipt_id === f.receiptId);
      if (!row || Number(row.cancelled_price) !== f.cancelPrice) {
        counts.refundMismatch++;
        example(`cancel flow ${f.index}: asked ${f.cancelPrice}, receipt shows ${row?.cancelled_price ?? 'nothing'}`);
      }
    }
    details['PG refunded (KRW)'] = refunded;

    // ---- webhooks: every delivery paygate recorded reached the receiver (a 2xx); each test send is recorded
    const deliveries = (
      await db.query<{ delivery_id: string; status: string }>('select delivery_id, status from webhook_deliveries')
    ).rows;
    const recorded = new Set(deliveries.map((d) => d.delivery_id));
    for (const d of deliveries) {
      if (!receiver.accepted.has(d.delivery_id)) {
        counts.webhooksLost++;
        example(`delivery ${d.delivery_id} (${d.status}) never accepted by the receiver`);
      }
    }
    for (const f of flows) {
      if (f.deliveryId && !recorded.has(f.deliveryId)) {
        counts.webhooksLost++;
        example(`test send ${f.deliveryId} has no delivery record`);
      }
    }
    details['webhook deliveries'] = deliveries.length;
    details['webhook arrivals'] = [...receiver.arrivals.values()].reduce((s, n) => s + n, 0);
    details['webhook first arrivals failed on purpose'] = receiver.failedOnPurpose;
    details['webhook ids seen by a deduping receiver'] = receiver.accepted.size;
    details['webhook ids received but not recorded'] = [...receiver.accepted].filter((id) => !recorded.has(id)).length;

    // ---- failed workflows
    const workflows = await workflowCounts(target.engineAddress, example);
    counts.failedWorkflows = workflows.failed;
    details['workflows running at the end'] = workflows.running;
    details['workflows completed'] = workflows.completed;
  } finally {
    await db.end().catch(() => undefined);
    await sandbox.close();
  }
  return { counts, details, examples };
}
