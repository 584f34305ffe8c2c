// Escrow at an upstream provider, behind the one gateway adapter contract: shipping start is the provider's
// `PUT /v2/escrow/shipping/start/{receipt_id}` with the merchant's fields as given (the provider applies its own
// rules: its merchant registration, the buyer it saved at payment), the order's status is its receipt's
// `escrow_data.status`. The provider's notifications reach paygate at /upstream/v1/notifications/{application_id},
// asked about before anything changes (src/payments/provider-notifications.ts), so none comes signed through here.
import type { EscrowGateway } from '../gateways/index.js';
import { RelayedApiError } from '../platform/errors.js';
import { type ProviderCall, send } from './card-gateway.js';
import { providerReceipt } from './rules.js';

/** The provider's RC_ESCROW_NOT_READY (2700): its escrow order is not at 0, waiting for shipping. */
const isEscrowNotReady = (err: unknown) =>
  err instanceof RelayedApiError && (err.body.error_code === 'RC_ESCROW_NOT_READY' || err.body.code === 2700);

const nonEmpty = (fields: Record<string, string>) =>
  Object.fromEntries(Object.entries(fields).filter(([, value]) => value.trim() !== ''));

export function createUpstreamEscrowGateway(call: ProviderCall): EscrowGateway {
  return {
    sendsParties: false,
    forwardsRequest: true,

    async startShipping(req) {
      const { shipment } = req;
      const user = nonEmpty({
        username: shipment.recipient.name,
        phone: shipment.recipient.phone,
        address: shipment.recipient.address,
        zipcode: shipment.recipient.zipcode,
      });
      const company = nonEmpty({
        name: shipment.sender.name,
        phone: shipment.sender.phone,
        zipcode: shipment.sender.zipcode,
        addr1: shipment.sender.addr1,
        addr2: shipment.sender.addr2,
      });
      const shipped = send(
        call,
        {
          method: 'PUT',
          path: `/v2/escrow/shipping/start/${encodeURIComponent(req.gatewayTid)}`,
          idempotencyKey: req.idempotencyKey,
          body: {
            tracking_number: shipment.trackingNumber,
            delivery_corp: shipment.deliveryCorp,
            ...(shipment.shippingDay !== undefined ? { shipping_day: shipment.shippingDay } : {}),
            ...(shipment.redirectUrl !== undefined ? { redirect_url: shipment.redirectUrl } : {}),
            ...(Object.keys(user).length > 0 ? { user } : {}),
            ...(Object.keys(company).length > 0 ? { company } : {}),
          },
        },
        providerReceipt,
      );
      let receipt: Awaited<typeof shipped>;
      try {
        receipt = await shipped;
      } catch (err) {
        if (!isEscrowNotReady(err)) throw err;
        // The provider keeps no Idempotency-Key on this PUT: a shipping start whose answer was lost (a reset, a cut at
        // the deadline) and is sent again is refused as "not waiting for shipping" although it was made. The
        // provider's receipt tells: an order no longer at 0 has been shipped, and its later moves follow by the
        // provider's notifications and the workflow's reconcile; one still at 0 is the refusal it says.
        const atProvider = await send(
          call,
          { method: 'GET', path: `/v2/receipt/${encodeURIComponent(req.gatewayTid)}` },
          providerReceipt,
        );
        if (atProvider.escrow_data == null || atProvider.escrow_data.status === 0) throw err;
        receipt = atProvider;
      }
      const confirmUrl = receipt.escrow_data?.escrow_confirm_url;
      return confirmUrl !== undefined ? { confirmUrl } : {};
    },

    async orderStatus(req) {
      const receipt = await send(
        call,
        { method: 'GET', path: `/v2/receipt/${encodeURIComponent(req.gatewayTid)}` },
        providerReceipt,
      );
      // a receipt without escrow_data (the spec: it may occasionally be absent) tells nothing new: the order stays
      if (receipt.escrow_data == null) throw new Error('the provider answered the receipt without escrow_data');
      return receipt.escrow_data.status as Awaited<ReturnType<EscrowGateway['orderStatus']>>;
    },

    verifyNotification() {
      return undefined;
    },
  };
}
