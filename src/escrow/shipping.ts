// PUT /v2/escrow/shipping/start/{receipt_id}: the database's answers first (ownership, 2069, 2700), then the
// shipment resolved for the order's PG, then the order's workflow sends it (update-with-start: the run is started when
// it is missing).
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { ESCROW_WORKFLOW_TYPE, escrowWorkflowId, shippingStartUpdate, type EscrowWorkflow } from './contract.js';
import {
  EscrowStatus,
  parseShippingStart,
  resolveShipmentAsGiven,
  resolveShipmentMinimal,
  resolveShipmentStrict,
} from './rules.js';
import { ApiError } from '../platform/errors.js';
import { updateTimedOut, workflowRefusal } from '../platform/temporal/workflow-calls.js';
import { isResourceId, PAYMENT_COMPLETE, type ReceiptResponse } from '../payments/receipt-rules.js';
import type { Project } from '../projects/index.js';
import { merchantReceiptId } from '../payments/index.js';

import { adoptFromProvider } from './adoption.js';
import type { EscrowContext } from './context.js';

export async function shippingStart(
  ctx: EscrowContext,
  project: Project,
  receiptId: string,
  body: unknown,
): Promise<ReceiptResponse> {
  const { stores, callTimeoutMs, workflows, inputOf, ownEscrow, escrowGatewayOf, render } = ctx;
  const known = isResourceId(receiptId) ? await stores.receipts.findNamed(project.application_id, receiptId) : undefined;
  // another project's receipt of the same id (ids a provider assigns are unique per its account only) is no answer
  // for this one: the project's provider is asked
  if (known?.application_id !== project.application_id && isResourceId(receiptId)) {
    await adoptFromProvider(ctx, project, receiptId);
  }
  const { receipt, order } = await ownEscrow(project, receiptId, known);
  if (receipt.status !== PAYMENT_COMPLETE) throw new ApiError('RC_NOT_CONFIRMED');
  if (order.status !== EscrowStatus.Waiting) throw new ApiError('RC_ESCROW_NOT_READY');
  const request = parseShippingStart(body);
  const gateway = await escrowGatewayOf(receipt);
  if (!gateway) throw new ApiError('RC_ESCROW_SHIPPING_NO_METHOD');
  const shipment = gateway.forwardsRequest
    ? resolveShipmentAsGiven(request)
    : gateway.sendsParties
      ? resolveShipmentStrict(request, project.merchant, stores.escrow.openBuyer(order))
      : resolveShipmentMinimal(request);

  const { client, taskQueue } = workflows();
  try {
    await client.withDeadline(Date.now() + callTimeoutMs, () =>
      client.workflow.executeUpdateWithStart(shippingStartUpdate, {
        args: [{ nonce: randomUUID(), shipment }],
        startWorkflowOperation: new WithStartWorkflowOperation<EscrowWorkflow>(ESCROW_WORKFLOW_TYPE, {
          workflowId: escrowWorkflowId(receipt.receipt_id),
          workflowIdConflictPolicy: 'USE_EXISTING',
          taskQueue,
          args: [inputOf(receipt, project)],
        }),
      }),
    );
  } catch (err) {
    if (updateTimedOut(err)) {
      throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The escrow workflow did not answer in time; retry later.' });
    }
    throw workflowRefusal(err, merchantReceiptId(receipt)) ?? err;
  }
  return render(receipt.receipt_id, project);
}
