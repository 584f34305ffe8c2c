// The reconcile workflow's activities: settling a charge or a cancel whose PG answer was lost (through the
// charge and cancel services, which ask the PG by the operation's derived key), and telling the merchant.
// Each is safe to run again: settling changes only a receipt that is still pending, and every notice is
// saved under delivery ids derived from what it settled.
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { RECONCILED_EVENT, type ReconcileNotice, type ReconcileResult } from '../payments/reconcile-contract.js';
import { type DeliveryContentType, PROJECT_EVENTS } from '../webhooks/rules.js';
import { type CancelService, type ChargeService, merchantReceiptId, ReconcileLater, receiptResponse } from '../payments/index.js';
import type { WebhookService } from '../webhooks/index.js';

export interface ReconcileActivityDeps {
  /** the process's charge and cancel services: settling asks the PG and records, on the services' clock */
  readonly charges: Pick<ChargeService, 'settle'>;
  readonly cancels: Pick<CancelService, 'settle'>;
  /** the merchant's notices (feedback_url and the project's webhook_url) */
  readonly webhooks: Pick<WebhookService, 'deliverFeedback' | 'deliverToProject'>;
}

/** A notice's delivery id: 24 hex characters like every id, the same on every retry. */
export function reconcileDeliveryId(noticeKey: string, target: 'feedback' | 'project'): string {
  return createHash('sha256').update(`reconcile\u0000${noticeKey}\u0000${target}`).digest('hex').slice(0, 24);
}

/** A live owner of the call: retried; an unreachable PG (a 5xx ApiError) and anything else are retried as they are. */
function retryable(err: unknown): never {
  if (err instanceof ReconcileLater) throw ApplicationFailure.retryable(err.message, 'ReconcileLater');
  throw err;
}

const DECLINED_FEEDBACK = 'failed';

export function createReconcileActivities({ charges, cancels, webhooks }: ReconcileActivityDeps) {
  return {
    async settleCharge(input: { receiptId: string }): Promise<ReconcileResult> {
      const settled = await charges.settle(input.receiptId).catch(retryable);
      if (settled.outcome === 'none') return { outcome: 'none' };
      const { receipt, project } = settled;
      const tags = [merchantReceiptId(receipt), receipt.order_id];
      const target = receipt.feedback;
      let result: Record<string, unknown>;
      let feedbackPayload: Record<string, unknown>;
      if (settled.outcome === 'completed') {
        const rendered = { ...receiptResponse(receipt, project) };
        result = { receipt: rendered };
        feedbackPayload = rendered;
      } else {
        const error = settled.error.toBody();
        result = { receipt_id: receipt.receipt_id, order_id: receipt.order_id, ...error };
        feedbackPayload = {
          receipt_id: receipt.receipt_id,
          order_id: receipt.order_id,
          order_name: receipt.order_name,
          price: receipt.price,
          status: DECLINED_FEEDBACK,
          ...error,
        };
      }
      return {
        outcome: settled.outcome,
        notice: {
          applicationId: receipt.application_id,
          noticeKey: `charge\u0000${receipt.receipt_id}`,
          tags,
          payload: { webhook_type: RECONCILED_EVENT.webhookType, operation: 'charge', outcome: settled.outcome, ...result },
          ...(target
            ? {
                feedback: {
                  url: target.url,
                  contentType: target.content_type as DeliveryContentType,
                  payload: feedbackPayload,
                },
              }
            : {}),
        },
      };
    },

    async settleCancel(input: { receiptId: string; cancelKey: string }): Promise<ReconcileResult> {
      const settled = await cancels.settle(input.receiptId, input.cancelKey).catch(retryable);
      if (settled.outcome === 'none') return { outcome: 'none' };
      const { receipt, pending } = settled;
      const cancel = {
        cancel_id: pending.cancel_id,
        cancel_price: pending.amount,
        cancel_tax_free: pending.tax_free,
      };
      return {
        outcome: settled.outcome,
        notice: {
          applicationId: receipt.application_id,
          noticeKey: `cancel\u0000${pending.cancel_key}`,
          tags: [merchantReceiptId(receipt), receipt.order_id],
          payload: {
            webhook_type: RECONCILED_EVENT.webhookType,
            operation: 'cancel',
            outcome: settled.outcome,
            cancel,
            ...(settled.outcome === 'cancelled'
              ? { receipt: settled.response }
              : {
                  receipt: { ...receiptResponse(receipt, settled.project) },
                  ...(settled.pgErrorCode !== undefined ? { pg_error_code: settled.pgErrorCode } : {}),
                }),
          },
        },
      };
    },

    async notifyReconciled(notice: ReconcileNotice): Promise<void> {
      if (notice.feedback) {
        await webhooks.deliverFeedback(
          notice.applicationId,
          { url: notice.feedback.url, contentType: notice.feedback.contentType },
          { event: PROJECT_EVENTS[100], eventCode: 100, tags: notice.tags, payload: notice.feedback.payload },
          reconcileDeliveryId(notice.noticeKey, 'feedback'),
        );
      }
      await webhooks.deliverToProject(
        notice.applicationId,
        { event: RECONCILED_EVENT.event, eventCode: RECONCILED_EVENT.eventCode, tags: notice.tags, payload: notice.payload },
        reconcileDeliveryId(notice.noticeKey, 'project'),
      );
    },
  };
}

export type ReconcileActivities = ReturnType<typeof createReconcileActivities>;
