// An upstream provider's notification about a payment (POST /upstream/v1/notifications/{application_id}). Never
// trusted as sent (spec "Escrow status webhook" 3): only the receipt_id is read, the provider is asked with the
// project's keys what that receipt is, and paygate acts on the answer: an escrow order moves towards the provider's
// escrow status (its workflow signalled; when the provider cannot be asked then, the order asks it itself later); a receipt it relays is refreshed (a refund made at the provider); a charge whose answer was lost is handed to its reconcile workflow (started now if no sweep
// started it yet), which settles it and tells the merchant as any reconcile does. A receipt the provider does not
// know for these keys, or that paygate never relayed, changes nothing (2000). Acting twice changes nothing more.
import { GatewayUnavailableError } from '../gateways/index.js';
import { ApiError } from '../platform/errors.js';
import { type ProjectStore, toProject } from '../projects/index.js';
import { ProviderRefusedError, type UpstreamService } from '../upstream/index.js';
import { notifiedReceiptId, providerReceipt } from '../upstream/rules.js';
import { PAYMENT_PENDING } from './receipt-rules.js';
import type { ReceiptService, ReconcileStarter } from './receipts.js';
import type { ReceiptStore } from './receipts-store.js';

/** How long a notification's lookup at the provider may take: well within the provider's wait for the answer. */
export const NOTIFICATION_LOOKUP_DEADLINE_MS = 5_000;

export interface ProviderNotificationService {
  /** What the notification led to: the receipt refreshed, a lost charge settled, or nothing new. */
  handle(
    applicationId: string,
    body: unknown,
  ): Promise<{ readonly receipt_id: string; readonly outcome: 'refreshed' | 'reconciling' | 'signalled' | 'unchanged' }>;
}

/**
 * The escrow side of a notification (filled by the composition root with the escrow service, which sits above
 * payments): the order the project holds at its provider under this receipt_id is moved towards the provider's
 * escrow status; undefined when there is no such order.
 */
export type ProviderEscrowStatusPort = (
  applicationId: string,
  receiptId: string,
  providerStatus: number,
) => Promise<'signalled' | 'unchanged' | undefined>;

/**
 * The escrow order's follow-up (filled by the composition root with the escrow service): when the provider cannot be
 * asked about a notification, the project's open escrow order under this receipt_id asks it itself once it answers.
 * False when there is no such order.
 */
export type ProviderEscrowFollowUpPort = (applicationId: string, receiptId: string) => Promise<boolean>;

/**
 * The provider could not be asked (no answer, past its deadline, its circuit open, or its own 5xx: down behind its
 * front door): not a refusal of anything.
 */
function providerDidNotAnswer(err: unknown): boolean {
  return (
    err instanceof GatewayUnavailableError ||
    (err instanceof ProviderRefusedError && err.statusCode >= 500) ||
    (err instanceof ApiError && err.errorCode === 'UPSTREAM_UNAVAILABLE')
  );
}

export function createProviderNotificationService(deps: {
  readonly stores: { readonly receipts: ReceiptStore; readonly projects: Pick<ProjectStore, 'findById'> };
  readonly upstream: Pick<UpstreamService, 'call'>;
  readonly receipts: Pick<ReceiptService, 'lookup'>;
  /** the reconcile workflow of a lost charge: the one way it is settled and the merchant told */
  readonly reconcile?: ReconcileStarter;
  readonly escrow?: ProviderEscrowStatusPort;
  readonly escrowFollowUp?: ProviderEscrowFollowUpPort;
}): ProviderNotificationService {
  return {
    async handle(applicationId, body) {
      const receiptId = notifiedReceiptId(body);
      if (receiptId === undefined)
        throw new ApiError('INVALID_REQUEST', { payloadMessage: 'receipt_id is missing or malformed' });
      const projectRow = await deps.stores.projects.findById(applicationId);
      if (!projectRow) throw new ApiError('UPSTREAM_NOT_CONFIGURED');
      let answer: unknown;
      try {
        answer = await deps.upstream.call(applicationId, {
          method: 'GET',
          path: `/v2/receipt/${encodeURIComponent(receiptId)}`,
          // the provider waits for this answer (its own attempt times out, typically after 10-15 s): a lookup
          // that takes longer is an outage here too
          deadlineMs: NOTIFICATION_LOOKUP_DEADLINE_MS,
        });
      } catch (err) {
        // the provider does not know the receipt for this project's keys (unknown, another merchant's)
        if (err instanceof ProviderRefusedError && err.statusCode < 500) throw new ApiError('RC_NOT_FOUND');
        // the provider cannot be asked now: an escrow order follows up by itself (its workflow asks until the
        // provider answers), so the notification is taken instead of left to the provider's redeliveries, which may
        // come hours later or never. Anything else is answered 5xx: the provider sends it again.
        if (providerDidNotAnswer(err) && (await deps.escrowFollowUp?.(applicationId, receiptId)) === true) {
          return { receipt_id: receiptId, outcome: 'signalled' };
        }
        throw err;
      }
      const atProvider = providerReceipt.safeParse(answer);
      if (!atProvider.success || atProvider.data.receipt_id !== receiptId) throw new ApiError('RC_NOT_FOUND');

      // an escrow order's status comes from the provider's escrow_data (the top-level status is the payment's)
      const escrowStatus = atProvider.data.escrow_data?.status;
      if (escrowStatus !== undefined && deps.escrow) {
        const moved = await deps.escrow(applicationId, receiptId, escrowStatus);
        if (moved !== undefined) return { receipt_id: receiptId, outcome: moved };
      }

      // the provider's receipt_id names a receipt within this project only (another project's provider may use it too)
      const relayed = await deps.stores.receipts.findNamed(applicationId, receiptId);
      if (relayed?.application_id === applicationId && relayed.via_upstream) {
        const before = relayed.cancelled_price;
        const now = await deps.receipts.lookup(toProject(projectRow), receiptId);
        return { receipt_id: receiptId, outcome: now.cancelled_price !== before ? 'refreshed' : 'unchanged' };
      }
      // a charge whose answer was lost sits pending under a placeholder id: found by its order_id
      const orderId = atProvider.data.order_id;
      const pending = orderId === undefined ? undefined : await deps.stores.receipts.findByOrder(applicationId, orderId);
      if (pending?.via_upstream && pending.status === PAYMENT_PENDING) {
        if (!deps.reconcile) throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The workflow engine is not configured.' });
        await deps.reconcile.charge(pending.receipt_id);
        return { receipt_id: receiptId, outcome: 'reconciling' };
      }
      throw new ApiError('RC_NOT_FOUND');
    },
  };
}
