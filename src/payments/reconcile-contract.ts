// The reconcile workflow's contract, shared by the workflow, its activities, the services that start it
// and the worker's sweep. One workflow per charge or cancel that left paygate's control (the PG was called
// and no final answer was recorded): it asks the PG, settles the receipt and tells the merchant.

export const RECONCILE_WORKFLOW_TYPE = 'reconcileWorkflow';

/** The project webhook event of a settlement (webhook_type PAYMENT_RECONCILED in the body). */
export const RECONCILED_EVENT = { event: 'payment.reconciled', eventCode: 102, webhookType: 'PAYMENT_RECONCILED' } as const;

/** One per pending receipt: started again after it ended only if the receipt is still pending. */
export const reconcileChargeWorkflowId = (receiptId: string): string => `reconcile-charge:${receiptId}`;
/** One per cancel sent to the PG (its cancel_key, the receipt_cancels row it becomes). */
export const reconcileCancelWorkflowId = (cancelKey: string): string => `reconcile-cancel:${cancelKey}`;

export type ReconcileInput =
  | { readonly kind: 'charge'; readonly receiptId: string }
  | { readonly kind: 'cancel'; readonly receiptId: string; readonly cancelKey: string };

/** What the merchant is told once a reconcile settled something (built by the settling activity). */
export interface ReconcileNotice {
  readonly applicationId: string;
  /** derives the deliveries' ids: the same notice is saved once, whatever retries */
  readonly noticeKey: string;
  /** the charge request's feedback_url and its body */
  readonly feedback?: {
    readonly url: string;
    readonly contentType: 'application/json' | 'application/x-www-form-urlencoded';
    readonly payload: Record<string, unknown>;
  };
  /** the PAYMENT_RECONCILED event to the project's webhook_url */
  readonly payload: Record<string, unknown>;
  readonly tags: readonly string[];
}

export interface ReconcileResult {
  /** completed / failed (a charge), cancelled / not_cancelled (a cancel), none (a request settled it first) */
  readonly outcome: 'completed' | 'failed' | 'cancelled' | 'not_cancelled' | 'none';
  readonly notice?: ReconcileNotice;
}

/** The reconcile workflow's signature, for the services that start it without importing workflow code. */
export type ReconcileWorkflow = (input: ReconcileInput) => Promise<ReconcileResult['outcome']>;
