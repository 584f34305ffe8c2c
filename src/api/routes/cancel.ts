// POST /v2/cancel: full or partial refund of a payment receipt, recorded on the receipt.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { ApiError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { cancelIdempotencyKey, parseCancelRequest, planCancel, type CancelRequest } from '../../domain/receipt.js';
import { GatewayDeclinedError, GatewayUnavailableError } from '../../gateways/types.js';
import { acquireCancelLease, applyCancel, findCancelResponse, findReceipt, insertCancel, releaseCancelLease } from '../../store/receipts.js';
import type { Project } from '../../store/projects.js';
import { assertOwnedBy } from '../auth.js';
import { createIdempotencyHooks } from '../idempotency.js';
import { receiptResponse } from './receipt.js';

const DEFAULT_CANCEL_REASON = 'merchant cancel';
/** Longer than any PG call may take; a lease left by a crashed process expires after it. */
const CANCEL_LEASE_MS = 2 * 60 * 1000;

/**
 * Refunds a payment receipt of `project`, fully or partly, and records it on the receipt.
 * Returns the receipt as this cancel leaves it (or the stored first result of a repeated cancel_id).
 */
export async function cancelPayment(
  app: FastifyInstance,
  project: Project,
  cancel: CancelRequest,
  log: FastifyBaseLogger,
): Promise<Record<string, unknown>> {
  const db = app.deps.database.db;
  const found = await findReceipt(db, cancel.receiptId);
  if (!found) throw new ApiError('RC_NOT_FOUND');
  assertOwnedBy(project, found.application_id);
  if (cancel.cancelId !== undefined) {
    const first = await findCancelResponse(db, found.receipt_id, cancel.cancelId);
    if (first) return first;
  }

  // A lease rather than a row lock: no transaction is held while the PG answers.
  const now = app.deps.clock();
  const receipt = await acquireCancelLease(db, found.receipt_id, now, new Date(now.getTime() + CANCEL_LEASE_MS));
  if (!receipt) throw new ApiError('IDEMPOTENCY_IN_PROGRESS', { message: 'Another cancel of this receipt is in progress.' });
  try {
    if (cancel.cancelId !== undefined) {
      const first = await findCancelResponse(db, receipt.receipt_id, cancel.cancelId);
      if (first) {
        await releaseCancelLease(db, receipt.receipt_id);
        return first;
      }
    }
    const plan = planCancel(
      {
        status: receipt.status,
        price: receipt.price,
        taxFree: receipt.tax_free,
        cancelledPrice: receipt.cancelled_price,
        cancelledTaxFree: receipt.cancelled_tax_free,
      },
      cancel,
    );
    const gateway = app.deps.gateways.get(receipt.pg)?.card;
    if (!gateway) throw new ApiError('RC_PG_NOT_FOUND');
    if (receipt.gateway_tid === null) throw new ApiError('RECEIPT_NOT_CANCELLABLE');

    let result;
    try {
      result = await gateway.cancel({
        idempotencyKey: cancelIdempotencyKey(receipt.receipt_id, cancel.cancelId, receipt.cancelled_price, plan.amount),
        gatewayTid: receipt.gateway_tid,
        amount: plan.amount,
        taxFree: plan.taxFree,
        reason: cancel.cancelMessage ?? DEFAULT_CANCEL_REASON,
      });
    } catch (err) {
      if (err instanceof GatewayDeclinedError) {
        throw new ApiError('RECEIPT_NOT_CANCELLABLE', {
          message: `The PG refused the cancel: ${err.pgMessage}`,
          pgErrorCode: err.pgErrorCode,
        });
      }
      if (err instanceof GatewayUnavailableError) {
        throw new ApiError('GATEWAY_UNAVAILABLE', { message: `${err.message}. Retry the same cancel.`, cause: err });
      }
      throw err;
    }

    const response = await db.transaction().execute(async (trx) => {
      const updated = await applyCancel(trx, receipt, plan, result.cancelledAt);
      const rendered = receiptResponse(updated, project);
      await insertCancel(trx, {
        cancelKey: newId(),
        receiptId: receipt.receipt_id,
        cancelId: cancel.cancelId,
        plan,
        gatewayCancelTid: result.gatewayCancelTid,
        cancelledAt: result.cancelledAt,
        response: { ...rendered },
      });
      return { ...rendered };
    });
    log.info({ receipt_id: receipt.receipt_id, amount: plan.amount, fully: plan.fullyCancelled }, 'payment cancelled');
    return response;
  } catch (err) {
    await releaseCancelLease(db, receipt.receipt_id);
    throw err;
  }
}

export async function cancelRoutes(app: FastifyInstance): Promise<void> {
  const idempotency = createIdempotencyHooks({ database: app.deps.database, clock: app.deps.clock, keyring: app.deps.keyring });

  app.post(
    '/v2/cancel',
    {
      config: { auth: 'project', scope: 'cancel' },
      preHandler: idempotency.preHandler,
      onSend: idempotency.onSend,
      schema: {
        summary: 'Cancel (refund) a payment, fully or partly',
        description:
          'cancel_price omitted = everything that remains; more than remains -> 9424. A repeated cancel_id returns the ' +
          'first result. Fully refunded receipts move to status 20 (결제취소완료); partial refunds keep status 1 and raise ' +
          'cancelled_price. Unknown receipt 2000, another project\'s 1225; 9409 while another cancel of the receipt is running.',
        tags: ['billing'],
      },
    },
    async (request) => {
      return cancelPayment(app, request.project, parseCancelRequest(request.body), request.log);
    },
  );
}
