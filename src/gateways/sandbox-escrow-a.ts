// Adapter for sandbox_escrow_a (the spec's first escrow PG): every shipping field on the wire, its own carrier
// codes (15 names, '기타' among them; an unknown name is sent as 9999, so the buyer cannot track the parcel),
// shipping_day 5 when omitted, prepayment always SH, the confirmation page URL in the answer.
import { z } from 'zod';
import { EscrowStatus } from './rules.js';
import type { GatewayHttpClient } from './http-client.js';
import { createNotificationVerifier } from './sandbox-escrow-notifications.js';
import type { EscrowGateway } from './types.js';

/** The first escrow PG's carrier codes by the names merchants send. */
export const ESCROW_A_CARRIERS: Readonly<Record<string, string>> = {
  CJ대한통운: '04',
  우체국택배: '01',
  한진택배: '05',
  롯데택배: '08',
  로젠택배: '06',
  경동택배: '23',
  대신택배: '22',
  일양로지스: '11',
  합동택배: '32',
  천일택배: '17',
  건영택배: '18',
  호남택배: '45',
  CU편의점택배: '46',
  GS편의점택배: '24',
  기타: '9999',
};
export const ESCROW_A_OTHER = '9999';
export const ESCROW_A_DEFAULT_SHIPPING_DAY = 5;

const STATES: Readonly<Record<string, EscrowStatus>> = {
  WAIT: EscrowStatus.Waiting,
  DLV: EscrowStatus.ShippingStarted,
  CFRM: EscrowStatus.PurchaseConfirmed,
  RJCT: EscrowStatus.RejectionRequested,
  RFND: EscrowStatus.RejectionApproved,
  HOLD: EscrowStatus.SettlementHeld,
};

const shipData = z.object({ confirm_url: z.url() });
const statusData = z.object({ escrow_state: z.enum(Object.keys(STATES) as [string, ...string[]]) });

export function createSandboxEscrowAGateway(http: GatewayHttpClient, sandboxToken: string | undefined): EscrowGateway {
  return {
    sendsParties: true,
    async startShipping({ idempotencyKey, gatewayTid, shipment }) {
      const data = await http.call({
        method: 'POST',
        path: '/escrow-a/v1/shipments',
        idempotencyKey,
        body: {
          tid: gatewayTid,
          invoice_no: shipment.trackingNumber,
          dlv_company_code: ESCROW_A_CARRIERS[shipment.deliveryCorp] ?? ESCROW_A_OTHER,
          dlv_company_name: shipment.deliveryCorp,
          prepay: 'SH',
          dlv_day: shipment.shippingDay ?? ESCROW_A_DEFAULT_SHIPPING_DAY,
          rcv_name: shipment.recipient.name,
          rcv_tel: shipment.recipient.phone,
          rcv_addr: shipment.recipient.address,
          rcv_zip: shipment.recipient.zipcode,
          snd_name: shipment.sender.name,
          snd_tel: shipment.sender.phone,
          snd_zip: shipment.sender.zipcode,
          snd_addr1: shipment.sender.addr1,
          snd_addr2: shipment.sender.addr2,
          ...(shipment.redirectUrl !== undefined ? { return_url: shipment.redirectUrl } : {}),
        },
        data: shipData,
      });
      return { confirmUrl: data.confirm_url };
    },
    async orderStatus({ gatewayTid }) {
      const data = await http.call({
        method: 'POST',
        path: '/escrow-a/v1/orders/status',
        body: { tid: gatewayTid },
        data: statusData,
      });
      return STATES[data.escrow_state]!;
    },
    verifyNotification: createNotificationVerifier(sandboxToken),
  };
}
