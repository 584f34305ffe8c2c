// What the receipts store reads and writes (the receipt row, a new charge, a cancel) and its methods. The methods are
// grouped by what they serve in receipts-store-{charges,cancels,reconcile,reads}.ts; receipts-store.ts puts them together.
import type { ChargeApproval } from '../gateways/rules.js';
import type { Selectable } from 'kysely';
import type { CancelPlan, RecordedCancel } from './receipt-rules.js';
import type { Tables } from '../platform/db/db.js';
import type { PendingCancel } from '../platform/db/migrations/0011_reconcile.js';

export type ReceiptRow = Selectable<Tables['receipts']>;

export interface NewCharge {
  readonly receiptId: string;
  readonly applicationId: string;
  readonly orderId: string;
  readonly orderName: string;
  readonly billingKey: string;
  readonly chargeHash: string;
  readonly pg: string;
  readonly method: string;
  readonly methodSymbol: string;
  readonly price: number;
  readonly taxFree: number;
  readonly quota: number;
  readonly metadata: Record<string, unknown> | undefined;
  readonly requestedAt: Date;
  /** the request calling the PG owns the charge until then */
  readonly callUntil: Date;
  readonly feedback?: { readonly url: string; readonly contentType: string } | undefined;
  /** the request's Idempotency-Key as a keyring MAC (IdempotencyKeyProof.mac), if it carried one */
  readonly idempotencyKeyMac?: string | undefined;
  /** charged at the project's upstream provider: the receipt takes the provider's receipt_id once it answers */
  readonly viaUpstream?: boolean;
}

export type OrderClaim =
  | { readonly kind: 'claimed'; readonly receiptId: string; readonly keyAttempt: number }
  | { readonly kind: 'taken'; readonly row: ReceiptRow };

export interface ReceiptStore {
  /**
   * Claims the order_id for a charge with a pending receipt (status 0) before the PG is called.
   * When the order_id is already used, returns that receipt: the caller re-drives a pending one with
   * the same charge_hash (a retry after a PG timeout) and refuses everything else.
   */
  claimOrder(charge: NewCharge): Promise<OrderClaim>;
  /** A request re-driving a pending charge owns its PG call until `until`; undefined when it is no longer pending. */
  redriveCharge(receiptId: string, until: Date): Promise<ReceiptRow | undefined>;
  /**
   * Drops a pending receipt the PG refused, so the order_id is free again; the order_id's next attempt
   * gets the next PG key (the PG keeps the refusal under the old one).
   */
  declinePendingCharge(receiptId: string): Promise<void>;
  /**
   * Drops a pending receipt the PG never executed (its inquiry says so), unless a request took the call
   * again after `now`. Returns whether it was dropped.
   */
  dropUnexecutedCharge(receiptId: string, now: Date): Promise<boolean>;
  /**
   * Records the PG's approval: status 1 with the masked card and approval details. A concurrent
   * re-drive of the same charge may have recorded it first; then its row is returned as it is. An upstream
   * provider's receipt_id that another receipt of the project already has (the provider repeated itself) is not
   * taken: the charge is recorded under its own id and marked for attention (receipt_id: what the provider answered),
   * the other receipt untouched. What the PG says it charged where it disagrees with the request
   * (`result.disagreement`) is recorded as such, and marked.
   * `reconciledAt`: recorded by a reconcile workflow, not by the request.
   */
  completeCharge(receiptId: string, result: ChargeApproval, maskedNumber: string, reconciledAt?: Date): Promise<ReceiptRow>;
  /** Pending charges whose owner is gone (call window ended before `before`), oldest first. */
  orphanCharges(before: Date, limit: number): Promise<ReceiptRow[]>;
  /** Receipts with a cancel whose answer is not recorded and whose lease ended before `before`. */
  orphanCancels(before: Date, limit: number): Promise<ReceiptRow[]>;
  /** By paygate's own id (internal references: cancels, escrow orders, workflows, reconcile). */
  find(receiptId: string): Promise<ReceiptRow | undefined>;
  /**
   * By the receipt_id the merchant names (`merchantReceiptId`): the project's receipt of that id, else any project's
   * (callers check ownership, 1225, with the row's application_id, as for an id that names one receipt only).
   */
  findNamed(applicationId: string, receiptId: string): Promise<ReceiptRow | undefined>;
  /**
   * A refund an upstream provider made outside paygate (its console, another integration), as its receipt shows it:
   * the cancelled amounts move up to the provider's, never down, and not while a cancel of ours is pending (its
   * reconcile records it); the receipt as it is afterwards.
   */
  applyProviderCancel(
    receiptId: string,
    state: { readonly cancelledPrice: number; readonly cancelledTaxFree: number; readonly cancelledAt: Date },
  ): Promise<ReceiptRow | undefined>;
  /** The project's receipt of `orderId`, whatever its status (order_id is unique per project). */
  findByOrder(applicationId: string, orderId: string): Promise<ReceiptRow | undefined>;
  /** The project's receipts newest first, at most `limit`; `search` matches an order_id or a receipt_id exactly. */
  listOf(applicationId: string, q: { search?: string; limit: number }): Promise<ReceiptRow[]>;
  /**
   * Takes the receipt's cancel lease until `until`, so two cancels cannot refund the same won while
   * one waits for the PG. Returns the receipt as of taking the lease, or undefined when another
   * cancel holds it.
   */
  acquireCancelLease(receiptId: string, now: Date, until: Date, sameCancelKey?: string): Promise<ReceiptRow | undefined>;
  /**
   * Takes the lease of a receipt with no pending cancel and notes `pending` in the same statement, only while the
   * receipt still shows what `read` showed of what a cancel is planned from (its status and cancelled amounts).
   * Returns the receipt as of taking the lease, or undefined when it is held or moved since `read`.
   */
  acquireCancelLeaseNoted(read: ReceiptRow, pending: PendingCancel, now: Date, until: Date): Promise<ReceiptRow | undefined>;
  /**
   * Releases the lease and forgets a pending cancel: the PG did not make it. With `cancelKey`, only while
   * that cancel is the pending one (a retry may have taken it over).
   */
  releaseCancelLease(receiptId: string, cancelKey?: string): Promise<void>;
  /**
   * Notes the cancel about to be sent to the PG (under the held lease), for its reconcile workflow, only while the
   * pending cancel is still `replacing` (its cancel_key, or null for none): false when it was recorded or taken over
   * since the lease was acquired, and the receipt has moved on.
   */
  markCancelPending(receiptId: string, pending: PendingCancel, replacing: string | null): Promise<boolean>;
  /** The first cancel of a cancel_id on this receipt: what it refunded, from what, and its stored response. */
  findCancel(receiptId: string, cancelId: string): Promise<StoredCancel | undefined>;
  /**
   * In one statement: applies a cancel to the receipt (status 20 when nothing remains, lease
   * released) and records it with the response `render` makes of the updated receipt. Only while the
   * cancel is the receipt's pending one: undefined when another (a retry, its reconcile) recorded or took it.
   */
  recordCancel(
    cancel: NewCancel,
    render: (updated: ReceiptRow) => Record<string, unknown>,
  ): Promise<Record<string, unknown> | undefined>;
}

export interface StoredCancel extends RecordedCancel {
  readonly response: Record<string, unknown>;
}

export interface NewCancel {
  readonly cancelKey: string;
  readonly receipt: ReceiptRow;
  readonly cancelId: string | undefined;
  readonly plan: CancelPlan;
  readonly gatewayCancelTid: string;
  readonly cancelledAt: Date;
}
