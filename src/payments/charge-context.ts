// What every charge use case stands on: the deps the charge service is built from, the PG key an order_id's charge
// goes under, and what a provider's disagreeing answer leaves for an operator.
import { chargeIdempotencyKey } from './billing-rules.js';
import type { ReceiptAttention } from './receipt-rules.js';
import type { GatewayRegistry } from '../gateways/index.js';
import type { UpstreamGateways } from '../upstream/index.js';
import type { ProjectStore } from '../projects/index.js';
import type { OperationLog } from '../platform/operation-log.js';
import type { ReconcileStarter } from './receipts.js';
import type { OutboxTransaction, WebhookService } from '../webhooks/index.js';
import type { Metrics } from '../platform/observability/metrics.js';
import type { BillingKeyStore } from './billing-keys-store.js';
import type { ReceiptRow, ReceiptStore } from './receipts-store.js';

/**
 * The PG key of an order_id's charge: attempt 0 keeps the key of (project, order_id); after n declines
 * freed the order_id, the next attempt gets its own key (the PG keeps each refusal under the old one).
 */
export function pgChargeKey(projectId: string, orderId: string, attempt: number): string {
  return attempt === 0
    ? chargeIdempotencyKey(projectId, orderId)
    : chargeIdempotencyKey(projectId, `${orderId}\u0000#${attempt}`);
}

/** What a charge writes in one transaction: its completion and its feedback delivery (the outbox row). */
interface ChargeCompletion extends OutboxTransaction {
  readonly receipts: ReceiptStore;
}

/** What the charge service is built from (the composition root fills it). */
export interface ChargeDeps {
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
}

/** The time now: by the deps' clock, else the system's. */
export const chargeNow = (deps: ChargeDeps): Date => (deps.clock ? deps.clock() : new Date());

/** A provider charged something other than what was asked: the log line and the metric an operator sees. */
export function noteDisagreement(deps: ChargeDeps, receipt: ReceiptRow): void {
  deps.metrics?.charge('answer_mismatch', receipt.pg);
  deps.logger?.warn(
    { receipt_id: receipt.receipt_id, order_id: receipt.order_id, fields: (receipt.attention as ReceiptAttention).fields },
    "the upstream provider's answer does not match the charge asked for: recorded as the provider made it, marked for attention",
  );
}
