// Escrow: the sandbox's payments (escrow or not), shipping start, the buyer's events in the sandbox, the PG's
// notifications, and the order's events history. Each escrow order is a workflow (src/workflows/escrow.ts)
// started with its payment; the use cases (their own files) answer what the database can (ownership, 2703, 2069,
// 2700, the merchant and recipient checks), then send the workflow an update (shipping start) or a signal (a
// notification) and render the stored rows. This module puts them together with the reads.
import { parseSandboxBuyerEvent, type SandboxPaymentRequest } from './rules.js';
import { ApiError } from '../platform/errors.js';
import type { ReceiptResponse } from '../payments/receipt-rules.js';
import { formatTimestamp } from '../platform/time.js';
import { fetchSandboxPgRequests, sendSandboxBuyerEvent, gatewayFailure } from '../gateways/index.js';
import type { IdempotencyKeyProof } from '../platform/idempotency.js';
import type { Project } from '../projects/index.js';
import { receiptResponse } from '../payments/index.js';
import { createEscrowContext, type EscrowDeps, withEscrowData } from './context.js';
import { notification, providerEscrowStatus, providerFollowUp } from './notifications.js';
import { pay } from './payment.js';
import { shippingStart } from './shipping.js';

export { escrowDataLookup, type EscrowDeps } from './context.js';

export interface EscrowEventView {
  readonly seq: number;
  readonly event: string;
  readonly source: string;
  readonly from_status: number;
  readonly to_status?: number;
  readonly applied: boolean;
  readonly note?: string;
  readonly notification_id?: string;
  readonly delivery_id?: string;
  readonly occurred_at: string;
  readonly recorded_at: string;
}

export interface EscrowService {
  /** POST /sandbox/v1/payments: the PG approves, the receipt is stored (status 1), an escrow order's workflow starts. */
  /**
   * One PG payment and one receipt per (project, order_id), whoever retries: a retry under the same
   * Idempotency-Key whose first request died after storing the receipt gets that receipt; any other use of the
   * order_id is 9410.
   */
  pay(project: Project, req: SandboxPaymentRequest, idempotencyKey?: IdempotencyKeyProof): Promise<ReceiptResponse>;
  /** PUT /v2/escrow/shipping/start/{receipt_id}: the receipt with escrow_data in state 3. */
  shippingStart(project: Project, receiptId: string, body: unknown): Promise<ReceiptResponse>;
  /** POST /sandbox/v1/escrow/{receipt_id}/events: the buyer acts in the sandbox PG, which notifies paygate. */
  buyerEvent(project: Project, receiptId: string, body: unknown): Promise<{ notification_id: string | null; sent: boolean }>;
  /** A PG's notification, checked by its signature, handed to the order's workflow. */
  notification(pg: string, headers: Readonly<Record<string, string | string[] | undefined>>, rawBody: string): Promise<void>;
  /**
   * What the project's upstream provider answered about one of its escrow receipts (asked after its notification):
   * the events that bring the order there are signalled to its workflow. Undefined when paygate holds no escrow
   * order of the project at the provider under this id (the notification is then about something else).
   */
  providerEscrowStatus(
    applicationId: string,
    receiptId: string,
    providerStatus: number,
  ): Promise<'signalled' | 'unchanged' | undefined>;
  /**
   * The project's upstream provider notified a change about one of its escrow receipts, and could not be asked about
   * it then: the order's workflow asks the provider itself once it answers. False when paygate holds no open escrow
   * order of the project at the provider under this id.
   */
  providerFollowUp(applicationId: string, receiptId: string): Promise<boolean>;
  events(project: Project, receiptId: string): Promise<EscrowEventView[]>;
  /** The project's escrow orders as receipts with escrow_data, newest first (the dashboard). */
  orders(project: Project, limit: number): Promise<ReceiptResponse[]>;
  pgRequests(
    project: Project,
    receiptId: string,
  ): Promise<{ pg: string; operation: string; body: unknown; received_at: string }[]>;
}

export function createEscrowService(deps: EscrowDeps): EscrowService {
  const ctx = createEscrowContext(deps);
  const { stores, ownEscrow, ownReceipt, sandbox } = ctx;
  return {
    pay: (project, req, idempotencyKey) => pay(ctx, project, req, idempotencyKey),
    shippingStart: (project, receiptId, body) => shippingStart(ctx, project, receiptId, body),
    notification: (pg, headers, rawBody) => notification(ctx, pg, headers, rawBody),
    providerEscrowStatus: (applicationId, receiptId, providerStatus) =>
      providerEscrowStatus(ctx, applicationId, receiptId, providerStatus),
    providerFollowUp: (applicationId, receiptId) => providerFollowUp(ctx, applicationId, receiptId),

    async buyerEvent(project, receiptId, body) {
      const { receipt } = await ownEscrow(project, receiptId);
      const { event, duplicate } = parseSandboxBuyerEvent(body);
      if (!deps.gateways.get(receipt.pg)?.escrow || receipt.gateway_tid === null)
        throw new ApiError('RC_ESCROW_SHIPPING_NO_METHOD');
      const sent = await sendSandboxBuyerEvent(sandbox(), receipt.gateway_tid, event, duplicate).catch((err: unknown) => {
        throw gatewayFailure('charge', err);
      });
      return { notification_id: sent.notificationId, sent: sent.sent };
    },

    async orders(project, limit) {
      const orders = await stores.escrow.listOf(project.application_id, limit);
      const receipts = await Promise.all(orders.map((order) => stores.receipts.find(order.receipt_id)));
      return orders.flatMap((order, i) => {
        const receipt = receipts[i];
        return receipt ? [withEscrowData(receiptResponse(receipt, project), order)] : [];
      });
    },

    async events(project, receiptId) {
      const { receipt } = await ownEscrow(project, receiptId);
      return (await stores.escrow.events(receipt.receipt_id)).map((e) => ({
        seq: e.seq,
        event: e.event,
        source: e.source,
        from_status: e.from_status,
        ...(e.to_status !== null ? { to_status: e.to_status } : {}),
        applied: e.to_status !== null,
        ...(e.note !== null ? { note: e.note } : {}),
        ...(e.notification_id !== null ? { notification_id: e.notification_id } : {}),
        ...(e.delivery_id !== null ? { delivery_id: e.delivery_id } : {}),
        occurred_at: formatTimestamp(e.occurred_at),
        recorded_at: formatTimestamp(e.recorded_at),
      }));
    },

    async pgRequests(project, receiptId) {
      const receipt = await ownReceipt(project, receiptId);
      if (receipt.gateway_tid === null) return [];
      return fetchSandboxPgRequests(sandbox(), receipt.gateway_tid).catch((err: unknown) => {
        throw gatewayFailure('charge', err);
      });
    },
  };
}
