// Payment receipts as every billing operation returns them, the receipt lookup, and what charges and
// cancels share to hand a PG call that lost its answer to its reconcile workflow (src/workflows/payments.ts):
// the call window, the workflow starter and the worker's sweep for calls whose process died.
import {
  RECONCILE_WORKFLOW_TYPE,
  type ReconcileInput,
  type ReconcileWorkflow,
  reconcileCancelWorkflowId,
  reconcileChargeWorkflowId,
} from './reconcile-contract.js';
import { assertOwnedBy } from '../projects/access.js';
import { ApiError } from '../platform/errors.js';
import { providerReceipt } from '../upstream/rules.js';
import type { UpstreamService } from '../upstream/index.js';
import type { OperationLog } from '../platform/operation-log.js';
import {
  type EscrowData,
  isResourceId,
  PAYMENT_COMPLETE,
  type ReceiptAttention,
  renderReceipt,
  type ReceiptResponse,
} from './receipt-rules.js';
import type { Project } from '../projects/index.js';
import { merchantReceiptId, receiptView, type ReceiptRow } from './receipts-store.js';
import type { WorkflowRuntime } from '../platform/temporal/workflow-calls.js';
import type { IdempotencyStore } from '../platform/idempotency.js';
import type { ReceiptStore } from './receipts-store.js';

/**
 * How long the request that calls the PG owns the call (a pending charge, a cancel lease): longer than any
 * PG call may take (the gateway's connect, headers and body timeouts are 10 s each). After it, a call whose
 * process died is its reconcile workflow's.
 */
export const PG_CALL_WINDOW_MS = 45_000;

/** Someone still owns the call (a live request, a retry that took it again): the reconcile step runs again later. */
export class ReconcileLater extends Error {
  override readonly name = 'ReconcileLater';
}

/** Starts (or finds running) the reconcile workflow of a charge / a cancel. */
export interface ReconcileStarter {
  charge(receiptId: string): Promise<void>;
  cancel(receiptId: string, cancelKey: string): Promise<void>;
}

/** How long a request waits for the engine to accept a reconcile workflow before leaving it to the sweep. */
const START_TIMEOUT_MS = 10_000;

export function createReconcileStarter(workflows: WorkflowRuntime): ReconcileStarter {
  const start = async (workflowId: string, input: ReconcileInput): Promise<void> => {
    const { client, taskQueue } = workflows;
    await client.withDeadline(Date.now() + START_TIMEOUT_MS, () =>
      client.workflow.start<ReconcileWorkflow>(RECONCILE_WORKFLOW_TYPE, {
        workflowId,
        // a running reconcile is the one; one that ended left the receipt settled or pending for a new run
        workflowIdConflictPolicy: 'USE_EXISTING',
        taskQueue,
        args: [input],
      }),
    );
  };
  return {
    charge: (receiptId) => start(reconcileChargeWorkflowId(receiptId), { kind: 'charge', receiptId }),
    cancel: (receiptId, cancelKey) => start(reconcileCancelWorkflowId(cancelKey), { kind: 'cancel', receiptId, cancelKey }),
  };
}

/** At most this many of each kind per sweep; the next sweep takes the rest. */
const SWEEP_BATCH = 200;

/**
 * The worker's sweep: starts the reconcile workflow of every pending charge and pending cancel whose owner is
 * gone (its call window ended: the process died mid call, or could not start the workflow), and releases
 * Idempotency-Key records left in flight by requests that died, so the merchant's retry runs again.
 */
export async function sweepUnsettled(deps: {
  readonly stores: { readonly receipts: ReceiptStore; readonly idempotency: IdempotencyStore };
  readonly reconcile: ReconcileStarter;
  /** the clock the charges and cancels wrote their call windows with (Clocks.businessClock) */
  readonly businessClock: () => Date;
  /** the clock the API wrote its Idempotency-Key records with (Clocks.wallClock) */
  readonly wallClock: () => Date;
}): Promise<{ charges: number; cancels: number; keys: number }> {
  const now = deps.businessClock();
  const charges = await deps.stores.receipts.orphanCharges(now, SWEEP_BATCH);
  for (const row of charges) await deps.reconcile.charge(row.receipt_id);
  const cancels = await deps.stores.receipts.orphanCancels(now, SWEEP_BATCH);
  for (const row of cancels) {
    if (row.cancel_pending) await deps.reconcile.cancel(row.receipt_id, row.cancel_pending.cancel_key);
  }
  const keys = await deps.stores.idempotency.releaseStale(deps.wallClock());
  return { charges: charges.length, cancels: cancels.length, keys };
}

/** Gateways whose name starts with this play PGs; their receipts say sandbox: true. */
const SANDBOX_PG_PREFIX = 'sandbox_';

/** The receipt as every billing operation returns it. */
export function receiptResponse(row: ReceiptRow, project: Project): ReceiptResponse {
  return renderReceipt(
    receiptView(row, { sandbox: row.pg.startsWith(SANDBOX_PG_PREFIX), companyName: project.merchant.company_name }),
  );
}

/**
 * The escrow_data of a receipt, when its payment is an escrow order's: the escrow area supplies it
 * (src/escrow/context.ts, escrowDataLookup) and the composition root hands it in. Escrow orders are payments:
 * escrow depends on payments, and payments read nothing of escrow's.
 */
export type EscrowDataLookup = (receiptId: string) => Promise<EscrowData | undefined>;

export interface ReceiptService {
  /** A payment receipt of `project`: 2000 unknown, 1225 another project's. */
  lookup(project: Project, receiptId: string): Promise<ReceiptResponse>;
  /**
   * A receipt relayed to the project's provider, as the provider has it now, its refunds made there recorded: as
   * lookup, but a provider that cannot answer is an error (the caller must learn the provider's view: an escrow
   * refund the provider made), never the record answered as it is.
   */
  refreshFromProvider(project: Project, receiptId: string): Promise<ReceiptResponse>;
  /**
   * The project's receipts newest first (the dashboard); `search` is an order_id or a receipt_id. Each with what needs
   * an operator's attention on it (an upstream provider's answer that was not what was asked), if anything.
   */
  list(project: Project, q: { search?: string; limit: number }): Promise<ListedReceipt[]>;
  /** What needs an operator's attention on a receipt of `project` (the dashboard's receipt page); 2000 / 1225 as lookup. */
  attentionOf(project: Project, receiptId: string): Promise<ReceiptAttention | undefined>;
}

export interface ListedReceipt {
  readonly receipt: ReceiptResponse;
  readonly attention: ReceiptAttention | undefined;
}

const attentionOf = (row: ReceiptRow): ReceiptAttention | undefined =>
  (row.attention ?? undefined) as ReceiptAttention | undefined;

export function createReceiptService({
  stores,
  escrowData,
  upstream,
  logger,
}: {
  readonly stores: { readonly receipts: ReceiptStore };
  readonly escrowData: EscrowDataLookup;
  /** the projects' upstream providers: a receipt of one is refreshed from it on lookup */
  readonly upstream?: Pick<UpstreamService, 'call'>;
  readonly logger?: Pick<OperationLog, 'warn'>;
}): ReceiptService {
  /**
   * A paid receipt at an upstream provider, as the provider has it now: a refund made there outside paygate (its
   * console, another integration) is recorded before the lookup answers. A provider that cannot answer leaves the
   * receipt as paygate recorded it.
   */
  const refreshed = async (row: ReceiptRow, providerMustAnswer = false): Promise<ReceiptRow> => {
    if (!upstream || !row.via_upstream || row.status !== PAYMENT_COMPLETE) return row;
    let answer: unknown;
    try {
      answer = await upstream.call(row.application_id, {
        method: 'GET',
        path: `/v2/receipt/${encodeURIComponent(merchantReceiptId(row))}`,
      });
    } catch (err) {
      if (providerMustAnswer) throw err;
      logger?.warn(
        { receipt_id: row.receipt_id, err },
        'the upstream provider could not refresh a receipt; answering the record',
      );
      return row;
    }
    const atProvider = providerReceipt.safeParse(answer);
    const cancelledPrice = atProvider.success ? (atProvider.data.cancelled_price ?? 0) : 0;
    if (!atProvider.success && providerMustAnswer) {
      throw new Error('the upstream provider answered the receipt lookup with something that is not a receipt');
    }
    if (!atProvider.success || cancelledPrice <= row.cancelled_price) return row;
    return (
      (await stores.receipts.applyProviderCancel(row.receipt_id, {
        cancelledPrice: Math.min(cancelledPrice, row.price),
        cancelledTaxFree: Math.min(atProvider.data.cancelled_tax_free ?? row.cancelled_tax_free, row.tax_free),
        cancelledAt: atProvider.data.cancelled_at ?? new Date(),
      })) ?? row
    );
  };

  const lookup = async (project: Project, receiptId: string, providerMustAnswer: boolean): Promise<ReceiptResponse> => {
    if (!isResourceId(receiptId)) throw new ApiError('RC_NOT_FOUND');
    const found = await stores.receipts.findNamed(project.application_id, receiptId);
    if (!found) throw new ApiError('RC_NOT_FOUND');
    assertOwnedBy(project, found.application_id);
    const row = await refreshed(found, providerMustAnswer);
    // an escrow order comes only from a one-off payment: a billing-key charge needs no second read
    const escrow = row.billing_key === null ? await escrowData(row.receipt_id) : undefined;
    const receipt = receiptResponse(row, project);
    // an escrow payment's receipt carries escrow_data; any other receipt is returned as it is
    return escrow ? { ...receipt, escrow_data: escrow } : receipt;
  };

  return {
    lookup: (project, receiptId) => lookup(project, receiptId, false),
    refreshFromProvider: (project, receiptId) => lookup(project, receiptId, true),

    async list(project, q) {
      const rows = await stores.receipts.listOf(project.application_id, q);
      return rows.map((row) => ({ receipt: receiptResponse(row, project), attention: attentionOf(row) }));
    },

    async attentionOf(project, receiptId) {
      const found = isResourceId(receiptId) ? await stores.receipts.findNamed(project.application_id, receiptId) : undefined;
      if (!found) throw new ApiError('RC_NOT_FOUND');
      assertOwnedBy(project, found.application_id);
      return attentionOf(found);
    },
  };
}
