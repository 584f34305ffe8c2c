// POST /sandbox/v1/payments: the sandbox PG approves a payment (escrow or not), its receipt is stored, and an escrow
// order's workflow starts.
import { createHash } from 'node:crypto';
import { ESCROW_WORKFLOW_TYPE, escrowWorkflowId, type EscrowWorkflow } from './contract.js';
import type { SandboxPaymentRequest } from './rules.js';
import { ApiError } from '../platform/errors.js';
import type { ReceiptResponse } from '../payments/receipt-rules.js';
import { gatewayFailure } from '../gateways/index.js';
import type { IdempotencyKeyProof } from '../platform/idempotency.js';
import type { Project } from '../projects/index.js';
import { bindLogIds } from '../platform/observability/log-context.js';

import type { EscrowContext } from './context.js';

/** One PG payment and one receipt per (project, order_id), whoever retries (see EscrowService.pay). */
export async function pay(
  { deps, stores, callTimeoutMs, workflows, inputOf, render }: EscrowContext,
  project: Project,
  req: SandboxPaymentRequest,
  idempotencyKey?: IdempotencyKeyProof,
): Promise<ReceiptResponse> {
  const gateway = project.pgs.includes(req.pg) ? deps.gateways.get(req.pg) : undefined;
  if (!gateway?.payments) throw new ApiError('RC_PG_NOT_FOUND', { message: `PG '${req.pg}' takes no sandbox payments here.` });
  const taken = await stores.escrow.orderReceipt(project.application_id, req.orderId);
  if (taken) {
    const sameKey =
      idempotencyKey !== undefined && taken.idempotency_key_mac !== null && idempotencyKey.matches(taken.idempotency_key_mac);
    if (sameKey) return render(taken.receipt_id, project);
    throw new ApiError('ORDER_ID_DUPLICATED');
  }
  // Derived like the PG key: a retry after the PG paid and before the receipt was stored sends the PG the
  // same request (its merchantRef is the receipt id), which it answers with the first payment.
  const receiptId = createHash('sha256')
    .update(`receipt\u0000${project.application_id}\u0000${req.orderId}`)
    .digest('hex')
    .slice(0, 24);
  bindLogIds({ receipt_id: receiptId });
  const requestedAt = deps.clock();
  const escrowPg = req.escrow && gateway.escrow !== undefined;
  let paid: Awaited<ReturnType<typeof gateway.payments.pay>>;
  try {
    paid = await gateway.payments.pay({
      // one PG payment per (project, order_id), whoever retries
      idempotencyKey: `pay_${createHash('sha256').update(`${project.application_id}\u0000${req.orderId}`).digest('hex').slice(0, 40)}`,
      amount: req.price,
      taxFree: req.taxFree,
      orderId: req.orderId,
      orderName: req.orderName,
      escrow: req.escrow,
      merchantRef: receiptId,
      merchantId: project.application_id,
      ...(escrowPg && deps.notifyBaseUrl ? { notifyUrl: `${deps.notifyBaseUrl}/pg/v1/escrow/notifications/${req.pg}` } : {}),
    });
  } catch (err) {
    throw gatewayFailure('charge', err);
  }
  const receipt = await stores.escrow.insertPayment({
    receiptId,
    applicationId: project.application_id,
    orderId: req.orderId,
    orderName: req.orderName,
    pg: req.pg,
    price: req.price,
    taxFree: req.taxFree,
    metadata: req.metadata,
    gatewayTid: paid.gatewayTid,
    approvalNo: paid.approvalNo,
    card: paid.card,
    requestedAt,
    purchasedAt: paid.approvedAt,
    ...(req.escrow ? { escrow: { buyer: req.buyer } } : {}),
    idempotencyKeyMac: idempotencyKey?.mac,
  });
  if (!receipt) throw new ApiError('ORDER_ID_DUPLICATED');
  if (escrowPg) {
    const { client, taskQueue } = workflows();
    try {
      await client.withDeadline(Date.now() + callTimeoutMs, () =>
        client.workflow.start<EscrowWorkflow>(ESCROW_WORKFLOW_TYPE, {
          workflowId: escrowWorkflowId(receiptId),
          workflowIdConflictPolicy: 'USE_EXISTING',
          taskQueue,
          args: [inputOf(receipt, project)],
        }),
      );
    } catch (err) {
      // the payment happened; shipping start starts the workflow if it is still missing
      deps.logger?.warn({ receipt_id: receiptId, err }, 'escrow workflow not started with its payment; shipping start starts it');
    }
  }
  return render(receiptId, project);
}
