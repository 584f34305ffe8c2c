// Escrow: the sandbox's payments (escrow or not), shipping start, the buyer's events in the sandbox, the PG's
// notifications, and the order's events history. Each escrow order is a workflow (src/workflows/escrow.ts)
// started with its payment; this service answers what the database can (ownership, 2703, 2069, 2700, the
// merchant and recipient checks), then sends the workflow an update (shipping start) or a signal (a
// notification) and renders the stored rows.
import { createHash, randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import {
  ESCROW_WORKFLOW_TYPE,
  type EscrowInput,
  escrowWorkflowId,
  pgNotificationSignal,
  providerFollowUpSignal,
  shippingStartUpdate,
  type EscrowWorkflow,
} from './contract.js';
import { assertOwnedBy } from '../projects/access.js';
import {
  EscrowStatus,
  isBuyerEvent,
  parseSandboxBuyerEvent,
  parseShippingStart,
  renderEscrowData,
  eventsTowards,
  isFinalEscrowStatus,
  resolveShipmentAsGiven,
  resolveShipmentMinimal,
  resolveShipmentStrict,
  type SandboxPaymentRequest,
} from './rules.js';
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { updateTimedOut, workflowRefusal } from '../platform/temporal/workflow-calls.js';
import { type EscrowData, isResourceId, PAYMENT_COMPLETE, type ReceiptResponse } from '../payments/receipt-rules.js';
import { formatTimestamp } from '../platform/time.js';
import {
  fetchSandboxPgRequests,
  GatewayUnavailableError,
  sendSandboxBuyerEvent,
  type GatewayRegistry,
  gatewayFailure,
} from '../gateways/index.js';
import type { IdempotencyKeyProof } from '../platform/idempotency.js';
import type { Project } from '../projects/index.js';
import {
  type ReceiptRow,
  type EscrowDataLookup,
  merchantReceiptId,
  receiptResponse,
  type ReceiptStore,
} from '../payments/index.js';
import type { OperationLog } from '../platform/operation-log.js';
import { ProviderRefusedError, type UpstreamService } from '../upstream/index.js';
import { providerReceipt } from '../upstream/rules.js';
import { enforceMasked } from '../gateways/card-rules.js';
import { DEFAULT_WORKFLOW_CALL_TIMEOUT_MS, type WorkflowRuntime } from '../platform/temporal/workflow-calls.js';
import { bindLogIds } from '../platform/observability/log-context.js';
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
function withEscrowData(receipt: ReceiptResponse, order: EscrowOrderRow | undefined): ReceiptResponse {
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

export function createEscrowService(deps: {
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
}): EscrowService {
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

  /**
   * An escrow payment made at the project's provider that paygate has not seen (paid in the provider's payment
   * window): the provider answering for the project's keys is its ownership. Stored as the provider has it, under an
   * id of paygate's with the provider's receipt_id beside it (unique at the provider for these keys only), before its
   * workflow starts. Undefined when the project has no provider or the provider does not
   * know the receipt for these keys.
   */
  const adoptFromProvider = async (project: Project, receiptId: string): Promise<ReceiptRow | undefined> => {
    if (!deps.upstream) return undefined;
    let answer: unknown;
    try {
      answer = await deps.upstream.call(project.application_id, {
        method: 'GET',
        path: `/v2/receipt/${encodeURIComponent(receiptId)}`,
      });
    } catch (err) {
      // no provider, or the provider does not know the receipt for these keys: not found, as a local lookup
      if (
        (err instanceof ProviderRefusedError && err.statusCode < 500) ||
        (err instanceof ApiError && err.errorCode === 'UPSTREAM_NOT_CONFIGURED')
      ) {
        return undefined;
      }
      // the provider could not answer (its own 5xx, no answer): nothing was started here, the same start again will ask
      if (err instanceof ProviderRefusedError || err instanceof GatewayUnavailableError) {
        throw new ApiError(
          err instanceof GatewayUnavailableError && err.deadlineMissed ? 'GATEWAY_TIMEOUT' : 'GATEWAY_UNAVAILABLE',
          {
            message: 'The provider could not be asked about the receipt; nothing was started. Retry the same shipping start.',
            receiptId,
            cause: err,
          },
        );
      }
      throw err;
    }
    const paid = providerReceipt.safeParse(answer);
    if (!paid.success || paid.data.receipt_id !== receiptId || paid.data.pg === undefined) return undefined;
    const atProvider = paid.data;
    if (!(await deps.upstream.gateway(project.application_id, atProvider.pg ?? ''))?.escrow) return undefined;
    if (atProvider.escrow_data == null) throw new ApiError('RC_NOT_ESCROW');
    if (atProvider.status !== PAYMENT_COMPLETE) throw new ApiError('RC_NOT_CONFIRMED');
    if (atProvider.escrow_data.status !== EscrowStatus.Waiting) throw new ApiError('RC_ESCROW_NOT_READY');
    const card = atProvider.card_data;
    const stored = await stores.escrow.insertPayment({
      receiptId: newId(),
      providerReceiptId: receiptId,
      applicationId: project.application_id,
      orderId: atProvider.order_id ?? receiptId,
      orderName: atProvider.order_name ?? '',
      pg: atProvider.pg ?? '',
      price: atProvider.price ?? 0,
      taxFree: atProvider.tax_free ?? 0,
      metadata: undefined,
      gatewayTid: receiptId,
      approvalNo: card?.card_approve_no ?? '',
      card: {
        maskedNumber: enforceMasked(card?.card_no ?? ''),
        cardCompany: card?.card_company ?? '',
        cardCompanyCode: card?.card_company_code ?? '',
        cardType: card?.card_type ?? 'credit',
      },
      requestedAt: atProvider.requested_at ?? atProvider.purchased_at ?? deps.clock(),
      purchasedAt: atProvider.purchased_at ?? deps.clock(),
      escrow: { buyer: undefined },
      viaUpstream: true,
    });
    // a request adopting it at the same time stored it first: that one is the order
    return stored ?? (await stores.receipts.findNamed(project.application_id, receiptId));
  };

  const ownEscrow = async (project: Project, receiptId: string) => {
    const receipt = await ownReceipt(project, receiptId);
    const order = await stores.escrow.find(receipt.receipt_id);
    if (!order) throw new ApiError('RC_NOT_ESCROW');
    return { receipt, order };
  };
  const render = async (receiptId: string, project: Project): Promise<ReceiptResponse> => {
    const receipt = await stores.receipts.find(receiptId);
    if (!receipt) throw new ApiError('INTERNAL_ERROR', { cause: new Error(`receipt ${receiptId} vanished`) });
    return withEscrowData(receiptResponse(receipt, project), await stores.escrow.find(receiptId));
  };

  return {
    async pay(project, req, idempotencyKey) {
      const gateway = project.pgs.includes(req.pg) ? deps.gateways.get(req.pg) : undefined;
      if (!gateway?.payments)
        throw new ApiError('RC_PG_NOT_FOUND', { message: `PG '${req.pg}' takes no sandbox payments here.` });
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
          deps.logger?.warn(
            { receipt_id: receiptId, err },
            'escrow workflow not started with its payment; shipping start starts it',
          );
        }
      }
      return render(receiptId, project);
    },

    async shippingStart(project, receiptId, body) {
      const known = isResourceId(receiptId) ? await stores.receipts.findNamed(project.application_id, receiptId) : undefined;
      // another project's receipt of the same id (ids a provider assigns are unique per its account only) is no answer
      // for this one: the project's provider is asked
      if (known?.application_id !== project.application_id && isResourceId(receiptId)) {
        await adoptFromProvider(project, receiptId);
      }
      const { receipt, order } = await ownEscrow(project, receiptId);
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
    },

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

    async notification(pg, headers, rawBody) {
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
    },

    async providerEscrowStatus(applicationId, receiptId, providerStatus) {
      // receiptId is the provider's: paygate's own id names the order, its workflow and its events
      const receipt = await stores.receipts.findNamed(applicationId, receiptId);
      const order =
        receipt?.via_upstream && receipt.application_id === applicationId
          ? await stores.escrow.find(receipt.receipt_id)
          : undefined;
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
    },

    async providerFollowUp(applicationId, receiptId) {
      const receipt = await stores.receipts.findNamed(applicationId, receiptId);
      const order =
        receipt?.via_upstream && receipt.application_id === applicationId
          ? await stores.escrow.find(receipt.receipt_id)
          : undefined;
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
