// The escrow workflow's activities: the PG's shipping start and status inquiry, the refund of a rejection
// approval through the cancel service, and recording a transition together with its ESCROW_STATUS_CHANGED
// delivery. Each is safe to run again: the PG call carries a key derived from the order, the refund a
// cancel_id, the transition the workflow's sequence number, the delivery an id derived from both.
import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { EscrowTransition } from '../escrow/contract.js';
import { type EscrowDataView, escrowWebhookPayload, renderEscrowData } from '../escrow/rules.js';
import type { ResolvedShipment, ShipmentTracking } from '../gateways/rules.js';
import { ApiError } from '../platform/errors.js';
import { type OutboundEvent, PROJECT_EVENTS } from '../webhooks/rules.js';
import type { EscrowGateway, GatewayRegistry } from '../gateways/index.js';
import {
  type ReceiptRow,
  type ReceiptStore,
  type CancelService,
  merchantReceiptId,
  type ReceiptService,
  receiptResponse,
} from '../payments/index.js';
import { PAYMENT_CANCELLED } from '../payments/receipt-rules.js';
import type { UpstreamGateways } from '../upstream/index.js';
import type { WorkflowTimeStamp } from '../platform/temporal/sandbox-clock.js';
import { type OperationLog, pinoStyleLog } from '../platform/operation-log.js';
import type { WebhookService } from '../webhooks/index.js';
import type { EscrowStore } from '../escrow/index.js';
import { type Project, type ProjectStore, toProject } from '../projects/index.js';
import { callGateway } from './failures.js';

export interface EscrowActivityDeps {
  readonly stores: { readonly escrow: EscrowStore; readonly receipts: ReceiptStore; readonly projects: ProjectStore };
  readonly gateways: GatewayRegistry;
  /** the rejection approval's refund: the worker's cancel service (Temporal retries it; no reconcile hand-over) */
  readonly cancels: Pick<CancelService, 'cancel'>;
  /** the projects' upstream providers: an order paid at one is shipped and asked there, and refunded by it */
  readonly upstream?: UpstreamGateways;
  /** a receipt as its provider has it now (the refund the provider made on a rejection approval) */
  readonly receipts?: Pick<ReceiptService, 'refreshFromProvider'>;
  /** the ESCROW_STATUS_CHANGED delivery to the project's webhook_url */
  readonly webhooks: Pick<WebhookService, 'deliverToProject'>;
  readonly clock?: () => Date;
}

/** The cancel_id of a rejection approval's refund: one refund per order, whoever retries. */
export const ESCROW_REFUND_CANCEL_ID = 'escrow-rejection-approved';
const ESCROW_WEBHOOK_CODE = 200;

/** The delivery id of one transition's webhook: 24 hex characters like every id, the same on every retry. */
export function escrowDeliveryId(receiptId: string, seq: number): string {
  return createHash('sha256').update(`escrow-webhook\u0000${receiptId}\u0000${seq}`).digest('hex').slice(0, 24);
}

/** The order's escrow: at the project's provider for a payment made there (runs started before name no receipt). */
async function escrowGateway(deps: EscrowActivityDeps, pg: string, receiptId?: string): Promise<EscrowGateway> {
  const receipt = receiptId === undefined ? undefined : await deps.stores.receipts.find(receiptId);
  const escrow = receipt?.via_upstream
    ? (await deps.upstream?.gateway(receipt.application_id, pg))?.escrow
    : deps.gateways.get(pg)?.escrow;
  if (!escrow) throw ApplicationFailure.nonRetryable(`PG '${pg}' has no escrow`, 'GatewayNotConfigured');
  return escrow;
}

/** The ESCROW_STATUS_CHANGED event of an order that moved to `view.status`: its receipt with the escrow keys. */
function escrowStatusChangedEvent(view: EscrowDataView, receipt: ReceiptRow, owner: Project): OutboundEvent {
  const escrowData = renderEscrowData(view);
  const payload = escrowWebhookPayload(
    { ...receiptResponse(receipt, owner), escrow_data: escrowData },
    escrowData,
    { applicationId: owner.application_id, apiVersion: owner.api_version },
    receipt.billing_key,
  );
  return {
    event: PROJECT_EVENTS[ESCROW_WEBHOOK_CODE],
    eventCode: ESCROW_WEBHOOK_CODE,
    tags: [merchantReceiptId(receipt), String(view.status)],
    payload,
  };
}

export function createEscrowActivities(deps: EscrowActivityDeps) {
  const clock = deps.clock ?? (() => new Date());
  const { stores, cancels, webhooks } = deps;
  const activityLog = (): OperationLog => pinoStyleLog(Context.current().log) as unknown as OperationLog;
  const project = async (applicationId: string) => {
    const row = await stores.projects.findById(applicationId);
    if (!row) throw ApplicationFailure.nonRetryable(`project ${applicationId} no longer exists`, 'ProjectNotFound');
    return toProject(row);
  };

  return {
    async startEscrowShipping(
      input: WorkflowTimeStamp & {
        receiptId: string;
        attempt: number;
        pg: string;
        gatewayTid: string;
        shipment: ResolvedShipment;
      },
    ) {
      const escrow = await escrowGateway(deps, input.pg, input.receiptId);
      return callGateway(() =>
        escrow.startShipping({
          idempotencyKey: `escrow:${input.receiptId}:shipping:${input.attempt}`,
          gatewayTid: input.gatewayTid,
          shipment: input.shipment,
        }),
      );
    },

    async inquireEscrowStatus(input: { receiptId?: string; pg: string; gatewayTid: string }): Promise<number> {
      const escrow = await escrowGateway(deps, input.pg, input.receiptId);
      return callGateway(() => escrow.orderStatus({ gatewayTid: input.gatewayTid }));
    },

    /** Refunds the whole payment; a payment the merchant already refunded in full is left as it is. */
    async refundEscrowPayment(input: { receiptId: string; applicationId: string }): Promise<{ refunded: boolean }> {
      const receipt = await stores.receipts.find(input.receiptId);
      // the lookup and the cancel take the receipt_id the merchant names (the provider's, for a relayed payment)
      const named = receipt ? merchantReceiptId(receipt) : input.receiptId;
      if (receipt?.via_upstream && deps.receipts) {
        // the provider refunds a rejection it approved itself: record its refund, never send a second one. Until the
        // provider answers with the refund made, the step is retried (a provider that is down, or a receipt read
        // before its refund): the order reaches -3 with the refund recorded, as its webhook says
        const atProvider = await deps.receipts.refreshFromProvider(await project(input.applicationId), named);
        if (atProvider.status !== PAYMENT_CANCELLED) {
          throw new Error(`the provider's receipt ${named} is not refunded yet (status ${atProvider.status}): asked again`);
        }
        return { refunded: false };
      }
      try {
        await cancels.cancel(
          await project(input.applicationId),
          {
            receiptId: named,
            cancelPrice: undefined,
            cancelTaxFree: undefined,
            cancelId: ESCROW_REFUND_CANCEL_ID,
            cancelMessage: 'escrow rejection approved',
          },
          activityLog(),
        );
        return { refunded: true };
      } catch (err) {
        if (err instanceof ApiError && err.errorCode === 'RECEIPT_NOT_CANCELLABLE') return { refunded: false };
        throw err;
      }
    },

    /**
     * Records one event of the order; a transition also gets its ESCROW_STATUS_CHANGED delivery (when the
     * project has a webhook_url), saved once under an id derived from the order and the sequence number.
     */
    async recordEscrowEvent(
      input: WorkflowTimeStamp & {
        transition: EscrowTransition;
        tracking?: ShipmentTracking;
      },
    ): Promise<{ deliveryId?: string }> {
      const { transition } = input;
      const recorded = await stores.escrow.record(transition, input.tracking, clock());
      if (recorded.event.to_status === null) return {};
      if (recorded.event.delivery_id !== null) return { deliveryId: recorded.event.delivery_id };

      const owner = await project(recorded.order.application_id);
      const receipt = await stores.receipts.find(transition.receiptId);
      if (!receipt) throw ApplicationFailure.nonRetryable(`receipt ${transition.receiptId} vanished`, 'ReceiptNotFound');
      const event = escrowStatusChangedEvent(
        {
          status: recorded.event.to_status,
          shippingStartedAt: recorded.order.shipping_started_at,
          receiptConfirmedAt: recorded.order.receipt_confirmed_at,
          receiptRevokedAt: recorded.order.receipt_revoked_at,
          confirmUrl: recorded.order.confirm_url,
        },
        receipt,
        owner,
      );
      const delivery = await webhooks.deliverToProject(
        owner.application_id,
        event,
        escrowDeliveryId(transition.receiptId, transition.seq),
      );
      if (!delivery) return {};
      await stores.escrow.setDelivery(transition.receiptId, transition.seq, delivery.delivery_id);
      return { deliveryId: delivery.delivery_id };
    },
  };
}

export type EscrowActivities = ReturnType<typeof createEscrowActivities>;
