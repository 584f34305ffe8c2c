// Adapter for sandbox_escrow_b (the spec's second escrow PG): it receives only the payment TID, the tracking
// number and its carrier code (the first PG's names minus 호남택배, plus five more; unknown -> ETC). No
// recipient or sender, no shipping day, no prepayment flag.
import { z } from 'zod';
import { EscrowStatus } from './rules.js';
import type { GatewayHttpClient } from './http-client.js';
import { createNotificationVerifier } from './sandbox-escrow-notifications.js';
import type { EscrowGateway } from './types.js';

/** The second escrow PG's carrier codes by the names merchants send. */
export const ESCROW_B_CARRIERS: Readonly<Record<string, string>> = {
  CJ대한통운: 'CJGLS',
  우체국택배: 'EPOST',
  한진택배: 'HANJIN',
  롯데택배: 'LOTTE',
  로젠택배: 'LOGEN',
  경동택배: 'KDEXP',
  대신택배: 'DAESIN',
  일양로지스: 'ILYANG',
  합동택배: 'HDEXP',
  천일택배: 'CHUNIL',
  건영택배: 'KUNYOUNG',
  CU편의점택배: 'CVSNET',
  GS편의점택배: 'GSPOST',
  기타: 'ETC',
  DHL: 'DHL',
  EMS: 'EMS',
  FedEx: 'FEDEX',
  UPS: 'UPS',
  쿠팡로지스틱스: 'COUPANG',
};
export const ESCROW_B_OTHER = 'ETC';

const STATES: Readonly<Record<string, EscrowStatus>> = {
  ready: EscrowStatus.Waiting,
  shipping: EscrowStatus.ShippingStarted,
  confirmed: EscrowStatus.PurchaseConfirmed,
  rejected: EscrowStatus.RejectionRequested,
  refunded: EscrowStatus.RejectionApproved,
  held: EscrowStatus.SettlementHeld,
};

const emptyData = z.object({}).optional();
const statusData = z.object({ STATE: z.enum(Object.keys(STATES) as [string, ...string[]]) });

export function createSandboxEscrowBGateway(http: GatewayHttpClient, sandboxToken: string | undefined): EscrowGateway {
  return {
    sendsParties: false,
    async startShipping({ idempotencyKey, gatewayTid, shipment }) {
      await http.call({
        method: 'POST',
        path: '/escrow-b/v1/invoices',
        idempotencyKey,
        body: {
          TID: gatewayTid,
          INVOICE_NO: shipment.trackingNumber,
          COURIER: ESCROW_B_CARRIERS[shipment.deliveryCorp] ?? ESCROW_B_OTHER,
        },
        data: emptyData,
      });
      return {};
    },
    async orderStatus({ gatewayTid }) {
      const data = await http.call({ method: 'POST', path: '/escrow-b/v1/inquiry', body: { TID: gatewayTid }, data: statusData });
      return STATES[data.STATE]!;
    },
    verifyNotification: createNotificationVerifier(sandboxToken),
  };
}
