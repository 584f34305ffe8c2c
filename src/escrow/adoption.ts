// An escrow payment made at the project's provider that paygate has not seen (paid in the provider's payment window),
// adopted when its shipping starts: the provider answering for the project's keys is its ownership.
import { EscrowStatus } from './rules.js';
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { PAYMENT_COMPLETE } from '../payments/receipt-rules.js';
import { GatewayUnavailableError } from '../gateways/index.js';
import type { Project } from '../projects/index.js';
import type { ReceiptRow } from '../payments/index.js';
import { ProviderRefusedError } from '../upstream/index.js';
import { providerReceipt } from '../upstream/rules.js';
import { enforceMasked } from '../gateways/card-rules.js';

import type { EscrowContext } from './context.js';

/**
 * An escrow payment made at the project's provider that paygate has not seen (paid in the provider's payment
 * window): the provider answering for the project's keys is its ownership. Stored as the provider has it, under an
 * id of paygate's with the provider's receipt_id beside it (unique at the provider for these keys only), before its
 * workflow starts. Undefined when the project has no provider or the provider does not
 * know the receipt for these keys.
 */
export async function adoptFromProvider(
  { deps, stores }: EscrowContext,
  project: Project,
  receiptId: string,
): Promise<ReceiptRow | undefined> {
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
}
