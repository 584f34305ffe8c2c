// What the gateway contract (types.ts) carries besides card data (card-rules.ts): the carrier and the verified person
// of an identity PG, the shipment and the escrow status of an escrow PG, the approval of a charge and where a PG's
// answer disagreed with the request. The areas above (payments, verification, escrow) speak of these values too and
// take them from here. Pure code without dependencies: the workflows' bundle imports it.
import type { MaskedCard } from './card-rules.js';

/** The mobile carriers an identity PG knows (the spec's values). */
export type Carrier = 'SKT' | 'KT' | 'LGT' | 'SKT_MVNO' | 'KT_MVNO' | 'LGT_MVNO';

export const CARRIERS: readonly Carrier[] = ['SKT', 'KT', 'LGT', 'SKT_MVNO', 'KT_MVNO', 'LGT_MVNO'];

/** The person an identity PG is asked to verify, as the merchant gave them. */
export interface IdentityPerson {
  readonly name: string;
  readonly phone: string;
  /** YYMMDD + first digit of the back part, 7 characters */
  readonly identityNo: string;
  readonly carrier: Carrier;
}

export interface VerifiedPerson {
  readonly name: string;
  readonly phone: string;
  /** YYYYMMDD */
  readonly birth: string;
  /** 1 male, 0 female */
  readonly gender: 0 | 1;
  /** the identity gateway's original string */
  readonly foreigner: '0' | '1';
  readonly carrier: Carrier;
  /** CI: the same for one person across merchants */
  readonly ci: string;
  /** DI: differs per merchant for the same person */
  readonly di: string;
}

/** What identifies a parcel: the carrier and its tracking number (what an escrow order records of its shipment). */
export interface ShipmentTracking {
  readonly trackingNumber: string;
  readonly deliveryCorp: string;
}

/**
 * A shipping start's own fields, as the merchant gave them: the one place they are typed, from the request
 * (escrow/rules.ts parses them) to the PG adapters. A new field is added here, in the parse step and in the adapters
 * that send it; the workflow, its activities and the stores carry the shipment whole.
 */
export interface ShipmentBasics extends ShipmentTracking {
  readonly shippingDay?: number;
  readonly redirectUrl?: string;
}

/** Who ships to whom, after the fallbacks: what the PG adapter puts on the wire. */
export interface ResolvedShipment extends ShipmentBasics {
  readonly recipient: { readonly name: string; readonly phone: string; readonly address: string; readonly zipcode: string };
  readonly sender: {
    readonly name: string;
    readonly phone: string;
    readonly zipcode: string;
    readonly addr1: string;
    readonly addr2: string;
  };
}

/** An escrow order's status as the spec numbers it and an escrow PG reports it. */
export const EscrowStatus = {
  /** escrow waiting: shipping start is allowed only here */
  Waiting: 0,
  ShippingStarted: 3,
  PurchaseConfirmed: 1,
  RejectionRequested: -2,
  /** the payment is refunded through the cancel service */
  RejectionApproved: -3,
  SettlementHeld: -1,
} as const;
export type EscrowStatus = (typeof EscrowStatus)[keyof typeof EscrowStatus];

/** A charge the PG approved, as the receipt records it. */
export interface ChargeApproval {
  /** the receipt_id an upstream provider gave the payment, which paygate's receipt takes; absent for a local PG */
  readonly receiptId?: string;
  readonly gatewayTid: string;
  readonly approvedAt: Date;
  readonly approvalNo: string;
  readonly card: MaskedCard;
  readonly quota: number;
  /**
   * Where the PG's answer disagrees with what was asked (an upstream provider's defect): the receipt records the PG's
   * amounts, never the request's as if they were the answer, and is marked for attention. Absent: it charged what was
   * asked.
   */
  readonly disagreement?: AnswerDisagreement;
}

/** One field of a PG's answer that is not what was asked. */
export interface FieldDisagreement {
  readonly asked: string | number;
  /** null: the answer left the field out */
  readonly answered: string | number | null;
}

export interface AnswerDisagreement {
  /** the amounts the PG says it charged, which the receipt records (the request's where the PG's are unusable) */
  readonly price: number;
  readonly taxFree: number;
  /** by the spec's field name: order_id, price, tax_free, pg, billing_key */
  readonly fields: Readonly<Record<string, FieldDisagreement>>;
}
