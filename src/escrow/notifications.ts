// What escrow PGs and an upstream provider say about an order, handed to the order's workflow: a PG's signed
// notification, the provider's status of one of its escrow receipts (asked after its notification), and a follow-up
// when the provider could not be asked then.
import { WorkflowNotFoundError } from '@temporalio/client';
import { escrowWorkflowId, pgNotificationSignal, providerFollowUpSignal } from './contract.js';
import { EscrowStatus, isBuyerEvent, eventsTowards, isFinalEscrowStatus } from './rules.js';
import { ApiError } from '../platform/errors.js';
import { isResourceId } from '../payments/receipt-rules.js';

import type { EscrowContext } from './context.js';

export async function notification(
  { deps, stores, callTimeoutMs, workflows }: EscrowContext,
  pg: string,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  rawBody: string,
): Promise<void> {
  const gateway = deps.gateways.get(pg)?.escrow;
  if (!gateway) throw new ApiError('NOT_FOUND');
  const n = gateway.verifyNotification(headers, rawBody);
  if (!n) throw new ApiError('PG_NOTIFICATION_INVALID');
  const receipt = isResourceId(n.merchantRef) ? await stores.receipts.find(n.merchantRef) : undefined;
  if (!receipt || receipt.pg !== pg || receipt.gateway_tid !== n.gatewayTid) {
    throw new ApiError('PG_NOTIFICATION_INVALID', { message: 'The notification names no order of this PG.' });
  }
  const order = await stores.escrow.find(receipt.receipt_id);
  if (!order) throw new ApiError('PG_NOTIFICATION_INVALID', { message: 'The notification names no escrow order.' });
  const event = n.event;
  if (!isBuyerEvent(event)) throw new ApiError('INVALID_REQUEST', { payloadMessage: `unknown escrow event '${n.event}'` });
  // A PG redelivers until it gets its answer: the order's events keep an id at most twice (its first
  // handling and one 'duplicate notification'); further copies are answered without reaching the workflow,
  // so redeliveries cannot grow its history (nor the events) without bound.
  const known = await stores.escrow.notificationCount(receipt.receipt_id, n.notificationId);
  if (known >= 2) return;
  const { client } = workflows();
  try {
    await client.withDeadline(Date.now() + callTimeoutMs, () =>
      client.workflow.getHandle(escrowWorkflowId(receipt.receipt_id)).signal(pgNotificationSignal, {
        notificationId: n.notificationId,
        event,
        occurredAt: n.occurredAt.toISOString(),
        ...(known > 0 ? { recorded: true } : {}),
      }),
    );
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    // the order's workflow has ended: the notification is kept in the history, and changes nothing
    await stores.escrow.appendIgnored(
      {
        receiptId: receipt.receipt_id,
        event: n.event,
        source: 'pg_notification',
        fromStatus: order.status,
        note: 'the order has ended',
        notificationId: n.notificationId,
        occurredAt: n.occurredAt.toISOString(),
      },
      deps.clock(),
    );
  }
}

export async function providerEscrowStatus(
  { deps, stores, callTimeoutMs, workflows }: EscrowContext,
  applicationId: string,
  receiptId: string,
  providerStatus: number,
): Promise<'signalled' | 'unchanged' | undefined> {
  // receiptId is the provider's: paygate's own id names the order, its workflow and its events
  const receipt = await stores.receipts.findNamed(applicationId, receiptId);
  const order =
    receipt?.via_upstream && receipt.application_id === applicationId ? await stores.escrow.find(receipt.receipt_id) : undefined;
  if (!receipt || !order) return undefined;
  const { client } = workflows();
  if (order.status === EscrowStatus.Waiting && providerStatus !== EscrowStatus.Waiting) {
    // shipped at the provider while paygate's order waits: a start of ours whose answer was lost; the order asks
    // the provider and records it (a notification cannot say which shipment it was)
    try {
      await client.withDeadline(Date.now() + callTimeoutMs, () =>
        client.workflow.getHandle(escrowWorkflowId(receipt.receipt_id)).signal(providerFollowUpSignal),
      );
    } catch (err) {
      // no run yet (its first shipping start never reached the engine): the merchant's next start begins it
      if (err instanceof WorkflowNotFoundError) return 'unchanged';
      throw err;
    }
    return 'signalled';
  }
  const events = eventsTowards(order.status, providerStatus);
  if (events.length === 0) return 'unchanged';
  const occurredAt = deps.clock().toISOString();
  for (const { event, to } of events) {
    // one id per status reached: the provider's redeliveries (and a reconcile that got there first) are duplicates
    const notificationId = `upstream:${receiptId}:${to}`;
    const known = await stores.escrow.notificationCount(receipt.receipt_id, notificationId);
    if (known >= 2) continue;
    await client.withDeadline(Date.now() + callTimeoutMs, () =>
      client.workflow.getHandle(escrowWorkflowId(receipt.receipt_id)).signal(pgNotificationSignal, {
        notificationId,
        event,
        occurredAt,
        ...(known > 0 ? { recorded: true } : {}),
      }),
    );
  }
  return 'signalled';
}

export async function providerFollowUp(
  { stores, callTimeoutMs, workflows }: EscrowContext,
  applicationId: string,
  receiptId: string,
): Promise<boolean> {
  const receipt = await stores.receipts.findNamed(applicationId, receiptId);
  const order =
    receipt?.via_upstream && receipt.application_id === applicationId ? await stores.escrow.find(receipt.receipt_id) : undefined;
  if (!receipt || !order || isFinalEscrowStatus(order.status)) return false;
  const { client } = workflows();
  try {
    await client.withDeadline(Date.now() + callTimeoutMs, () =>
      client.workflow.getHandle(escrowWorkflowId(receipt.receipt_id)).signal(providerFollowUpSignal),
    );
  } catch (err) {
    // the order's workflow has ended meanwhile: nothing is left to follow up
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
  return true;
}
