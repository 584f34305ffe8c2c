// What every escrow use case stands on: the dependencies the composition root hands the area, the workflow runtime,
// the project's own receipts and orders, where an order's escrow lives, and a receipt rendered with its escrow_data.
// The use cases are files of their own (payment.ts, adoption.ts, shipping.ts, notifications.ts); service.ts puts
// them together.
import type { EscrowInput } from './contract.js';
import { assertOwnedBy } from '../projects/access.js';
import { renderEscrowData } from './rules.js';
import { ApiError } from '../platform/errors.js';
import { type EscrowData, isResourceId, type ReceiptResponse } from '../payments/receipt-rules.js';
import type { GatewayRegistry } from '../gateways/index.js';
import type { Project } from '../projects/index.js';
import { type ReceiptRow, type EscrowDataLookup, receiptResponse, type ReceiptStore } from '../payments/index.js';
import type { OperationLog } from '../platform/operation-log.js';
import type { UpstreamService } from '../upstream/index.js';
import { DEFAULT_WORKFLOW_CALL_TIMEOUT_MS, type WorkflowRuntime } from '../platform/temporal/workflow-calls.js';
import type { EscrowOrderRow, EscrowStore } from './store.js';

/** An escrow order's escrow_data, as its receipt carries it. */
function escrowDataOf(order: EscrowOrderRow): EscrowData {
  return renderEscrowData({
    status: order.status,
    shippingStartedAt: order.shipping_started_at,
    receiptConfirmedAt: order.receipt_confirmed_at,
    receiptRevokedAt: order.receipt_revoked_at,
    confirmUrl: order.confirm_url,
  });
}

/** An escrow payment's receipt carries escrow_data; any other receipt is returned as it is. */
export function withEscrowData(receipt: ReceiptResponse, order: EscrowOrderRow | undefined): ReceiptResponse {
  if (!order) return receipt;
  return { ...receipt, escrow_data: escrowDataOf(order) };
}

/** What the payments' receipt lookup shows of an escrow order: its escrow_data, when the receipt has one. */
export function escrowDataLookup(store: Pick<EscrowStore, 'find'>): EscrowDataLookup {
  return async (receiptId) => {
    const order = await store.find(receiptId);
    return order && escrowDataOf(order);
  };
}

/** What the escrow area is built from (the composition root fills it). */
export interface EscrowDeps {
  readonly stores: { readonly escrow: EscrowStore; readonly receipts: ReceiptStore };
  readonly gateways: GatewayRegistry;
  readonly clock: () => Date;
  readonly workflows?: WorkflowRuntime;
  readonly workflowCallTimeoutMs?: number;
  /** where escrow PGs send their notifications ({base_url}/pg/v1/escrow/notifications/<pg>) */
  readonly notifyBaseUrl?: string;
  readonly sandboxUrl?: string;
  readonly sandboxToken?: string;
  readonly logger?: Pick<OperationLog, 'warn'>;
  /** the projects' upstream providers: an escrow payment made at one is shipped and tracked there */
  readonly upstream?: Pick<UpstreamService, 'gateway' | 'call'>;
}

export type EscrowContext = ReturnType<typeof createEscrowContext>;

export function createEscrowContext(deps: EscrowDeps) {
  const { stores } = deps;
  const callTimeoutMs = deps.workflowCallTimeoutMs ?? DEFAULT_WORKFLOW_CALL_TIMEOUT_MS;
  const workflows = (): WorkflowRuntime => {
    if (!deps.workflows) throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The workflow engine is not configured.' });
    return deps.workflows;
  };
  const sandbox = () => {
    if (!deps.sandboxUrl) throw new ApiError('NOT_FOUND');
    return { url: deps.sandboxUrl, token: deps.sandboxToken ?? '' };
  };

  const inputOf = (receipt: ReceiptRow, project: Project): EscrowInput => ({
    receiptId: receipt.receipt_id,
    applicationId: receipt.application_id,
    pg: receipt.pg,
    gatewayTid: receipt.gateway_tid ?? '',
    reconcileAfterHours: project.escrow_reconcile_hours,
  });

  const ownReceipt = async (project: Project, receiptId: string): Promise<ReceiptRow> => {
    if (!isResourceId(receiptId)) throw new ApiError('RC_NOT_FOUND');
    const receipt = await stores.receipts.findNamed(project.application_id, receiptId);
    if (!receipt) throw new ApiError('RC_NOT_FOUND');
    assertOwnedBy(project, receipt.application_id);
    return receipt;
  };
  /** Where an order's escrow lives: the project's provider for a payment made there, else the local PG. */
  const escrowGatewayOf = async (receipt: ReceiptRow) =>
    receipt.via_upstream
      ? (await deps.upstream?.gateway(receipt.application_id, receipt.pg))?.escrow
      : deps.gateways.get(receipt.pg)?.escrow;

  /** The project's escrow order of `receiptId`; `read`: the project's receipt of that id, when the caller has it. */
  const ownEscrow = async (project: Project, receiptId: string, read?: ReceiptRow) => {
    const receipt = read?.application_id === project.application_id ? read : await ownReceipt(project, receiptId);
    const order = await stores.escrow.find(receipt.receipt_id);
    if (!order) throw new ApiError('RC_NOT_ESCROW');
    return { receipt, order };
  };
  const render = async (receiptId: string, project: Project): Promise<ReceiptResponse> => {
    const receipt = await stores.receipts.find(receiptId);
    if (!receipt) throw new ApiError('INTERNAL_ERROR', { cause: new Error(`receipt ${receiptId} vanished`) });
    return withEscrowData(receiptResponse(receipt, project), await stores.escrow.find(receiptId));
  };

  return { deps, stores, callTimeoutMs, workflows, sandbox, inputOf, ownReceipt, escrowGatewayOf, ownEscrow, render };
}
