// The reserved-charge workflow's activities: revoking, and executing the charge through the charge service
// with the reserve's order_id. Each is safe to run again: the reserve's status guards every change, the
// charge service's order_id claim and derived PG key make a retried charge re-drive (never repeat) the PG
// call, and the result's feedback delivery has an id derived from the reserve, saved once.
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { ReserveExecution, RevokeResult } from '../reserves/contract.js';
import type { ChargeParams } from '../payments/billing-rules.js';
import { renderReserve } from '../reserves/rules.js';
import { type DeliveryContentType, type OutboundEvent, PROJECT_EVENTS, receiptFeedbackEvent } from '../webhooks/rules.js';
import {
  type BillingKeyStore,
  type ReceiptStore,
  findUsableBillingKey,
  type ChargeService,
  receiptResponse,
  adoptableReceipt,
  chargeProject,
  chargeRefusal,
  merchantReceiptId,
} from '../payments/index.js';
import type { WebhookService } from '../webhooks/index.js';
import type { ProjectStore } from '../projects/index.js';
import type { ReserveRow, ReserveStore } from '../reserves/index.js';

export interface ReserveActivityDeps {
  readonly stores: {
    readonly reserves: ReserveStore;
    readonly receipts: ReceiptStore;
    readonly billingKeys: BillingKeyStore;
    readonly projects: ProjectStore;
  };
  /** the reserve's charge: the worker's charge service (Temporal retries it; no reconcile hand-over) */
  readonly charges: Pick<ChargeService, 'chargeKey'>;
  /** the result's feedback_url delivery */
  readonly webhooks: Pick<WebhookService, 'deliverFeedback'>;
  readonly clock?: () => Date;
}

/** The feedback delivery id of a reserve's result: 24 hex characters like every id, the same on every retry. */
export function reserveFeedbackDeliveryId(reserveId: string): string {
  return createHash('sha256').update(`reserve-feedback\u0000${reserveId}`).digest('hex').slice(0, 24);
}

export function createReserveActivities(deps: ReserveActivityDeps) {
  const clock = deps.clock ?? (() => new Date());
  const { stores, charges, webhooks } = deps;
  const project = (applicationId: string) => chargeProject(stores, applicationId);
  const reserveRow = async (reserveId: string): Promise<ReserveRow> => {
    const row = await stores.reserves.find(reserveId);
    if (!row) throw ApplicationFailure.nonRetryable(`reserve ${reserveId} no longer exists`, 'ReserveNotFound');
    return row;
  };

  /** Charges an executing reserve once and records the outcome; a 5xx (PG or database unreachable) is thrown and retried. */
  const charge = async (row: ReserveRow): Promise<ReserveRow> => {
    const owner = await project(row.application_id);
    const params: ChargeParams = {
      billingKey: row.billing_key,
      orderName: row.order_name,
      orderId: row.order_id,
      price: row.price,
      taxFree: row.tax_free,
      quota: row.quota,
      metadata: row.metadata ?? undefined,
    };
    // a run that charged and died before recording it: the completed receipt is this reserve's charge
    const done = adoptableReceipt(await stores.receipts.findByOrder(row.application_id, row.order_id), params);
    if (done) return stores.reserves.finish(row.reserve_id, { status: 'paid', receiptId: merchantReceiptId(done) }, clock());
    try {
      const key = await findUsableBillingKey(stores, owner, row.billing_key);
      const receipt = await charges.chargeKey(owner, key, params, row.started_at ?? clock());
      return await stores.reserves.finish(row.reserve_id, { status: 'paid', receiptId: merchantReceiptId(receipt) }, clock());
    } catch (err) {
      // a refusal or a rule (declined, key destroyed, order_id taken) is final; an outage is retried
      const refusal = chargeRefusal(err);
      if (refusal) {
        return stores.reserves.finish(
          row.reserve_id,
          {
            status: 'failed',
            errorCode: refusal.errorCode,
            ...(refusal.pgErrorCode !== undefined ? { pgErrorCode: refusal.pgErrorCode } : {}),
          },
          clock(),
        );
      }
      throw err;
    }
  };

  /** The result to the reserve's feedback_url, saved once under the reserve's derived delivery id. */
  const sendFeedback = async (row: ReserveRow): Promise<void> => {
    if (row.feedback_url === null || row.feedback_delivery_id !== null) return;
    const owner = await project(row.application_id);
    let event: OutboundEvent;
    // the reserve keeps the receipt_id the merchant is shown
    const receipt = row.receipt_id === null ? undefined : await stores.receipts.findNamed(row.application_id, row.receipt_id);
    if (row.status === 'paid' && receipt) {
      event = receiptFeedbackEvent({ ...receiptResponse(receipt, owner), reserve_id: row.reserve_id });
    } else {
      event = {
        event: PROJECT_EVENTS[100],
        eventCode: 100,
        tags: [row.reserve_id, row.order_id],
        payload: { ...renderReserve(stores.reserves.view(row)) },
      };
    }
    const delivery = await webhooks.deliverFeedback(
      row.application_id,
      { url: row.feedback_url, contentType: (row.content_type ?? 'application/json') as DeliveryContentType },
      event,
      reserveFeedbackDeliveryId(row.reserve_id),
    );
    await stores.reserves.setFeedbackDelivery(row.reserve_id, delivery.delivery_id);
  };

  return {
    async revokeReserve(input: { reserveId: string }): Promise<RevokeResult> {
      const revoked = await stores.reserves.markRevoked(input.reserveId, clock());
      const row = revoked ?? (await reserveRow(input.reserveId));
      // the workflow's validator let it through, so only an earlier run of this activity can have moved it
      if (row.status !== 'revoked' || row.revoked_at === null) {
        throw ApplicationFailure.nonRetryable(`reserve ${input.reserveId} is ${row.status}`, 'RESERVE_NOT_REVOKABLE');
      }
      return { revokedAt: row.revoked_at.toISOString() };
    },

    async executeReserve(input: { reserveId: string }): Promise<ReserveExecution> {
      let row = await reserveRow(input.reserveId);
      if (row.status === 'revoked') return { status: 'revoked' };
      if (row.status === 'reserved') row = await stores.reserves.markExecuting(row.reserve_id, clock());
      if (row.status === 'executing') row = await charge(row);
      if (row.status !== 'paid' && row.status !== 'failed') {
        throw ApplicationFailure.nonRetryable(`reserve ${row.reserve_id} ended ${row.status}`, 'ReserveStateInvalid');
      }
      await sendFeedback(row);
      return { status: row.status, ...(row.receipt_id !== null ? { receiptId: row.receipt_id } : {}) };
    },
  };
}

export type ReserveActivities = ReturnType<typeof createReserveActivities>;
