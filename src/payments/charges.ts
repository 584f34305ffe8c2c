// Charging a billing key: once per (project, order_id), whoever asks (the charge route, a reserved
// charge, a subscription period). A charge with a feedback_url posts its receipt there once it completes,
// as a signed webhook delivery. A charge whose PG call ends without a final answer (timeout, lost answer,
// a failure of ours after the PG approved) is handed to its reconcile workflow, which asks the PG what it
// did and settles the receipt; a process that dies mid call leaves a pending receipt the worker's sweep
// hands over once its call window has passed.
import { chargeHash, chargeIdempotencyKey, type ChargeParams } from './billing-rules.js';
import { KEY_IN_METHOD, KEY_IN_METHOD_SYMBOL } from '../gateways/card-rules.js';
import { enforceMasked } from '../gateways/card-rules.js';
import { ApiError, RelayedApiError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { answerMismatchMessage, PAYMENT_COMPLETE, PAYMENT_PENDING, type ReceiptAttention } from './receipt-rules.js';
import { type FeedbackTarget, receiptFeedbackEvent } from '../webhooks/rules.js';
import {
  type ChargeRequest,
  type ChargeResult,
  type GatewayInquiry,
  type GatewayRegistry,
  gatewayFailure,
  isFinalRefusal,
} from '../gateways/index.js';
import type { UpstreamGateways } from '../upstream/index.js';
import { chargingCardGateway, storedGateway } from './card-gateways.js';
import type { BillingKeyRow } from './billing-keys-store.js';
import { type Project, toProject, type ProjectStore } from '../projects/index.js';
import { merchantReceiptId, type ReceiptRow } from './receipts-store.js';
import { findUsableBillingKey } from './usable-billing-key.js';
import type { OperationLog } from '../platform/operation-log.js';
import { PG_CALL_WINDOW_MS, ReconcileLater, type ReconcileStarter, receiptResponse } from './receipts.js';
import type { OutboxTransaction, WebhookService } from '../webhooks/index.js';
import type { Metrics } from '../platform/observability/metrics.js';
import { bindLogIds } from '../platform/observability/log-context.js';
import type { IdempotencyKeyProof } from '../platform/idempotency.js';
import type { BillingKeyStore } from './billing-keys-store.js';
import type { ReceiptStore } from './receipts-store.js';

/**
 * The PG key of an order_id's charge: attempt 0 keeps the key of (project, order_id); after n declines
 * freed the order_id, the next attempt gets its own key (the PG keeps each refusal under the old one).
 */
export function pgChargeKey(projectId: string, orderId: string, attempt: number): string {
  return attempt === 0
    ? chargeIdempotencyKey(projectId, orderId)
    : chargeIdempotencyKey(projectId, `${orderId}\u0000#${attempt}`);
}

/**
 * The error a charge left pending for its reconcile workflow answers with (the PG unreachable or its answer lost,
 * 9502; cut at its deadline, 9504; a PG key refused as reused, 9475; a failure of ours after the PG answered, 9500),
 * naming the pending receipt so the merchant can poll `GET /v2/receipt/{receipt_id}`. A charge at an upstream
 * provider is pending under paygate's own id, which keeps naming it once it completes under the provider's.
 */
function pendingChargeError(err: unknown, receiptId: string): unknown {
  if (err instanceof RelayedApiError) return err;
  if (err instanceof ApiError) return err.withReceipt(receiptId);
  return new ApiError('INTERNAL_ERROR', { cause: err, receiptId });
}

/** The answer to a charge whose provider charged something else (9480), naming the receipt as the provider made it. */
function answerMismatchError(receipt: ReceiptRow): ApiError {
  const attention = receipt.attention as ReceiptAttention;
  return new ApiError('UPSTREAM_ANSWER_MISMATCH', {
    message: answerMismatchMessage(attention.fields),
    receiptId: merchantReceiptId(receipt),
  });
}

/** How a reconcile workflow left a pending charge. */
export type ChargeSettlement =
  /** not pending any more: a request settled it */
  | { readonly outcome: 'none' }
  | { readonly outcome: 'completed'; readonly receipt: ReceiptRow; readonly project: Project }
  | {
      readonly outcome: 'failed';
      /** the pending receipt as it was before it was dropped */
      readonly receipt: ReceiptRow;
      readonly project: Project;
      readonly error: ApiError;
    };

export interface ChargeService {
  /** Charges the project's usable billing key named in `params` (2309, 1225, 9423 as findUsableBillingKey). */
  charge(
    project: Project,
    params: ChargeParams,
    requestedAt: Date,
    feedback?: FeedbackTarget,
    idempotencyKey?: IdempotencyKeyProof,
  ): Promise<ReceiptRow>;
  /**
   * Charges a billing key once per (project, order_id). The order_id is claimed with a pending receipt
   * before the PG is called (no transaction is held across the PG call). A pending receipt with the
   * same charge is a retry after a PG failure: it re-drives the PG under the same derived key, which
   * the PG answers without charging again. A completed receipt answers the same charge when its reconcile
   * workflow settled it, or when the charge was made under the same Idempotency-Key (its request died before
   * its answer was stored): the answer that request never got. Any other use of the order_id is 9410.
   */
  chargeKey(
    project: Project,
    key: BillingKeyRow,
    params: ChargeParams,
    requestedAt: Date,
    feedback?: FeedbackTarget,
    idempotencyKey?: IdempotencyKeyProof,
  ): Promise<ReceiptRow>;
  /**
   * The reconcile workflow's step: asks the PG what it did under the pending charge's key and records it
   * (completed, or dropped when refused / never executed). Throws ReconcileLater while a request still owns
   * the call, GATEWAY_UNAVAILABLE while the PG cannot answer.
   */
  settle(receiptId: string): Promise<ChargeSettlement>;
}

/** What a charge writes in one transaction: its completion and its feedback delivery (the outbox row). */
interface ChargeCompletion extends OutboxTransaction {
  readonly receipts: ReceiptStore;
}

export function createChargeService(deps: {
  readonly stores: {
    readonly receipts: ReceiptStore;
    readonly billingKeys: BillingKeyStore;
    /** the unit of work (Stores.transaction) */
    transaction<T>(work: (tx: ChargeCompletion) => Promise<T>): Promise<T>;
  } & Partial<{
    readonly projects: ProjectStore;
  }>;
  readonly gateways: GatewayRegistry;
  /** the projects' upstream providers: a key issued at one is charged there */
  readonly upstream?: UpstreamGateways;
  /** posts a completed charge's receipt to its feedback_url */
  readonly webhooks?: Pick<WebhookService, 'deliverFeedback' | 'dispatchNow'>;
  readonly logger?: Pick<OperationLog, 'warn'> & { readonly error?: OperationLog['warn'] };
  readonly metrics?: Pick<Metrics, 'charge'>;
  /** starts the reconcile workflow of a charge that lost its answer; without it, the worker's sweep does */
  readonly reconcile?: ReconcileStarter;
  readonly clock?: () => Date;
}): ChargeService {
  const { receipts, billingKeys } = deps.stores;
  const clock = deps.clock ?? (() => new Date());

  /**
   * Records the PG's approval; with a feedback_url, the receipt's delivery there is written in the same transaction
   * (an outbox row): a process that dies right after the commit leaves both, and the worker's dispatcher sends it.
   */
  const complete = async (
    project: Project,
    receiptId: string,
    result: ChargeResult,
    feedback: FeedbackTarget | undefined,
  ): Promise<ReceiptRow> => {
    const maskedNumber = enforceMasked(result.card.maskedNumber);
    const webhooks = feedback ? deps.webhooks : undefined;
    if (!feedback || !webhooks) return receipts.completeCharge(receiptId, result, maskedNumber);
    const completed = await deps.stores.transaction(async (tx) => {
      const row = await tx.receipts.completeCharge(receiptId, result, maskedNumber);
      const event = receiptFeedbackEvent({ ...receiptResponse(row, project) });
      await webhooks.deliverFeedback(project.application_id, feedback, event, undefined, tx);
      return row;
    });
    webhooks.dispatchNow();
    return completed;
  };

  /**
   * The call ended without a final answer: the reconcile workflow owns the charge from now. The call window stays
   * as it is: the PG may still hold the request and execute it, so its "never received" is believed only after.
   */
  const handOver = async (receiptId: string, err: unknown): Promise<void> => {
    if (err instanceof ApiError && err.errorCode === 'PG_KEY_REUSED') {
      deps.logger?.error?.({ receipt_id: receiptId, err }, 'the PG refused a charge key as reused: a defect, reconciled');
    }
    try {
      await deps.reconcile?.charge(receiptId);
    } catch (handOverErr) {
      // the sweep finds the pending receipt once its call window ends
      deps.logger?.warn({ receipt_id: receiptId, err: handOverErr }, 'a charge without an answer was left to the sweep');
    }
  };

  /** A provider charged something other than what was asked: the log line and the metric an operator sees. */
  const noteDisagreement = (receipt: ReceiptRow): void => {
    deps.metrics?.charge('answer_mismatch', receipt.pg);
    deps.logger?.warn(
      { receipt_id: receipt.receipt_id, order_id: receipt.order_id, fields: (receipt.attention as ReceiptAttention).fields },
      "the upstream provider's answer does not match the charge asked for: recorded as the provider made it, marked for attention",
    );
  };

  /** The charge a pending receipt asked its PG for, under the same key: what a re-sent call (the inquiry of a PG without one) sends. */
  const chargeOf = (row: ReceiptRow, key: BillingKeyRow): ChargeRequest => ({
    idempotencyKey: pgChargeKey(row.application_id, row.order_id, row.pg_key_attempt),
    gatewayBillingKey: billingKeys.openGatewayKey(key),
    amount: row.price,
    taxFree: row.tax_free,
    orderId: row.order_id,
    orderName: row.order_name,
    quota: row.card_quota ?? 0,
  });

  /** The pending receipt this request owns the PG call of, or a receipt that answers it. */
  const claim = async (
    project: Project,
    key: BillingKeyRow,
    params: ChargeParams,
    requestedAt: Date,
    feedback: FeedbackTarget | undefined,
    idempotencyKey: IdempotencyKeyProof | undefined,
  ): Promise<
    | {
        readonly pending: ReceiptRow | { receipt_id: string; pg_key_attempt: number };
        /** claimed by this request: no call was ever sent under it */
        readonly fresh?: true;
      }
    | { readonly answer: ReceiptRow }
  > => {
    const hash = chargeHash(params);
    // twice at most: a pending receipt dropped between our read and our re-drive frees the order_id
    for (let round = 0; round < 2; round++) {
      const until = new Date(clock().getTime() + PG_CALL_WINDOW_MS);
      const claimed = await receipts.claimOrder({
        receiptId: newId(),
        applicationId: project.application_id,
        orderId: params.orderId,
        orderName: params.orderName,
        billingKey: key.billing_key,
        chargeHash: hash,
        pg: key.pg,
        method: KEY_IN_METHOD,
        methodSymbol: KEY_IN_METHOD_SYMBOL,
        price: params.price,
        taxFree: params.taxFree,
        quota: params.quota,
        metadata: params.metadata,
        requestedAt,
        callUntil: until,
        feedback,
        idempotencyKeyMac: idempotencyKey?.mac,
        viaUpstream: key.via_upstream,
      });
      if (claimed.kind === 'claimed') {
        return { pending: { receipt_id: claimed.receiptId, pg_key_attempt: claimed.keyAttempt }, fresh: true };
      }
      const row = claimed.row;
      if (row.charge_hash !== hash) break;
      if (row.status === PAYMENT_COMPLETE) {
        // the provider charged something other than this request: every ask of it says so, never a plain receipt
        if (row.attention !== null) throw answerMismatchError(row);
        const sameKey =
          idempotencyKey !== undefined && row.idempotency_key_mac !== null && idempotencyKey.matches(row.idempotency_key_mac);
        if (row.reconciled_at !== null || sameKey) return { answer: row };
      }
      if (row.status !== PAYMENT_PENDING) break;
      const redriven = await receipts.redriveCharge(row.receipt_id, until);
      if (redriven) return { pending: redriven };
    }
    throw new ApiError('ORDER_ID_DUPLICATED');
  };

  const service: ChargeService = {
    async charge(project, params, requestedAt, feedback, idempotencyKey) {
      const key = await findUsableBillingKey(deps.stores, project, params.billingKey);
      return service.chargeKey(project, key, params, requestedAt, feedback, idempotencyKey);
    },

    async chargeKey(project, key, params, requestedAt, feedback, idempotencyKey) {
      const gateway = await chargingCardGateway(deps, project, key);
      const claimed = await claim(project, key, params, requestedAt, feedback, idempotencyKey);
      if ('answer' in claimed) return claimed.answer;
      const receiptId = claimed.pending.receipt_id;
      bindLogIds({ receipt_id: receiptId });

      let result: ChargeResult;
      try {
        result = await gateway.charge({
          idempotencyKey: pgChargeKey(project.application_id, params.orderId, claimed.pending.pg_key_attempt),
          gatewayBillingKey: billingKeys.openGatewayKey(key),
          amount: params.price,
          taxFree: params.taxFree,
          orderId: params.orderId,
          orderName: params.orderName,
          quota: params.quota,
        });
      } catch (err) {
        const failure = gatewayFailure('charge', err);
        // the provider's circuit opened since the check before the claim: nothing was sent, the order_id is free again
        if (claimed.fresh && failure instanceof ApiError && failure.errorCode === 'UPSTREAM_UNAVAILABLE') {
          await receipts.declinePendingCharge(receiptId);
          throw failure;
        }
        const declined = isFinalRefusal(failure);
        deps.metrics?.charge(declined ? 'declined' : 'failed', key.pg);
        // A refusal is final: the order_id is free for another attempt, under the next PG key.
        if (declined) {
          await receipts.declinePendingCharge(receiptId);
          throw failure;
        }
        await handOver(receiptId, failure);
        throw pendingChargeError(failure, receiptId);
      }
      let completed: ReceiptRow;
      try {
        completed = await complete(project, receiptId, result, feedback);
      } catch (err) {
        // the PG charged and we could not record it: the reconcile workflow will (with the feedback, when there is one)
        await handOver(receiptId, err);
        throw pendingChargeError(err, receiptId);
      }
      if (completed.attention !== null) {
        noteDisagreement(completed);
        throw answerMismatchError(completed);
      }
      deps.metrics?.charge('paid', key.pg);
      return completed;
    },

    async settle(receiptId) {
      const row = await receipts.find(receiptId);
      if (!row || row.status !== PAYMENT_PENDING) return { outcome: 'none' };
      const now = clock();
      const projectRow = await deps.stores.projects?.findById(row.application_id);
      if (!projectRow) throw new Error(`project ${row.application_id} of receipt ${receiptId} not found`);
      const project = toProject(projectRow);
      const gateway = (await storedGateway(deps, row))?.card;
      if (!gateway) throw new Error(`receipt ${receiptId}: its PG ${row.pg} is not configured`);
      let inquiry: GatewayInquiry<ChargeResult>;
      try {
        if (gateway.inquire) {
          inquiry = await gateway.inquire({
            operation: 'charge',
            idempotencyKey: pgChargeKey(row.application_id, row.order_id, row.pg_key_attempt),
          });
        } else {
          // no inquiry (an upstream provider): the same charge under the same key gets the provider's first result
          const key = row.billing_key === null ? undefined : await billingKeys.find(row.billing_key);
          if (!key) throw new Error(`receipt ${receiptId}: its billing key is gone`);
          inquiry = { state: 'executed', result: await gateway.charge(chargeOf(row, key)) };
        }
      } catch (err) {
        const failure = gatewayFailure('charge', err);
        if (!isFinalRefusal(failure)) throw failure;
        // the provider refused it under its key: as an inquiry's "refused"
        inquiry = {
          state: 'refused',
          pgErrorCode:
            failure instanceof RelayedApiError
              ? (failure.body.pg_error_code ?? failure.body.error_code)
              : failure instanceof ApiError
                ? (failure.pgErrorCode ?? failure.errorCode)
                : '',
          pgMessage: failure instanceof RelayedApiError ? failure.body.message : String((failure as Error).message),
        };
      }
      if (inquiry.state === 'executed') {
        const result = inquiry.result;
        const completed = await receipts.completeCharge(receiptId, result, enforceMasked(result.card.maskedNumber), now);
        if (completed.attention !== null) noteDisagreement(completed);
        return { outcome: 'completed', receipt: completed, project };
      }
      if (inquiry.state === 'refused') {
        await receipts.declinePendingCharge(receiptId);
        const error = new ApiError('PAYMENT_DECLINED', {
          message: `The PG refused the payment: ${inquiry.pgMessage}`,
          pgErrorCode: inquiry.pgErrorCode,
        });
        return { outcome: 'failed', receipt: row, project, error };
      }
      // Never received, as far as the PG knows now. Believed once the call window has passed: until then the PG may
      // still hold the request (a slow PG, the sandbox's timeout fault) and execute it after we dropped the receipt.
      if (row.pg_call_until !== null && row.pg_call_until.getTime() > now.getTime()) {
        throw new ReconcileLater(`receipt ${receiptId}: its PG call window has not passed`);
      }
      // dropped unless a retry took the call meanwhile (then it answers)
      if (!(await receipts.dropUnexecutedCharge(receiptId, now))) {
        throw new ReconcileLater(`receipt ${receiptId}: a retry took the PG call`);
      }
      const error = new ApiError('GATEWAY_UNAVAILABLE', {
        message: 'The PG never received the charge; nothing was charged. The order_id is free again.',
      });
      return { outcome: 'failed', receipt: row, project, error };
    },
  };
  return service;
}
