// The contract between paygate's core and a payment / identity gateway ("PG").
// One adapter per gateway implements the capabilities it has; routes, activities and workflows see
// only these types, never a gateway's wire format (hyperswitch's connector idea). The values they carry
// (card, masked card, carrier, verified person) are domain types.
import { RelayedApiError } from '../platform/errors.js';
import type { CardDetails, MaskedCard } from './card-rules.js';
import type { ChargeApproval, EscrowStatus, IdentityPerson, ResolvedShipment, VerifiedPerson } from './rules.js';

export interface IssuedBillingKey {
  /** the gateway's own key; paygate keeps it server-side and hands merchants its own billing_key */
  readonly gatewayBillingKey: string;
  readonly gatewayTid: string;
  readonly card: MaskedCard;
  readonly expiresAt: Date;
  readonly issuedAt: Date;
  /**
   * Ids the gateway assigns to what it issued: an upstream provider's own billing_key and receipt_id, which paygate
   * then uses as its ids (a merchant switching between the provider and paygate keeps its ids). Absent: paygate's own.
   */
  readonly assignedIds?: { readonly billingKey: string; readonly receiptId: string };
}

export interface ChargeRequest {
  /** derived from the charge (never random per attempt) so a retried call cannot charge twice */
  readonly idempotencyKey: string;
  readonly gatewayBillingKey: string;
  readonly amount: number;
  readonly taxFree: number;
  readonly orderId: string;
  readonly orderName: string;
  /** instalment months; 0 = lump sum */
  readonly quota: number;
}

export type ChargeResult = ChargeApproval;

export interface GatewayCancelRequest {
  readonly idempotencyKey: string;
  readonly gatewayTid: string;
  readonly amount: number;
  readonly taxFree: number;
  readonly reason: string;
}

export interface GatewayCancelResult {
  readonly gatewayCancelTid: string;
  readonly cancelledAt: Date;
}

/** What a PG did under an idempotency key, as its inquiry tells (reconciliation after a lost answer). */
export type GatewayInquiry<T> =
  | { readonly state: 'executed'; readonly result: T }
  | { readonly state: 'refused'; readonly pgErrorCode: string; readonly pgMessage: string }
  /** nothing was done under the key: the call never reached the PG, or failed before doing anything */
  | { readonly state: 'not_executed' };

export interface InquiryResults {
  readonly charge: ChargeResult;
  readonly cancel: GatewayCancelResult;
}

export interface CardBillingGateway {
  issueBillingKey(req: {
    readonly idempotencyKey: string;
    readonly card: CardDetails;
    readonly orderName: string;
    readonly subscriptionId: string;
    /** the project the PG books the key to (a real PG's sub-merchant id; the sandbox faults per merchant) */
    readonly merchantId?: string;
  }): Promise<IssuedBillingKey>;
  charge(req: ChargeRequest): Promise<ChargeResult>;
  cancel(req: GatewayCancelRequest): Promise<GatewayCancelResult>;
  destroyBillingKey(req: { readonly gatewayBillingKey: string }): Promise<void>;
  /**
   * Asks the PG what it did under a charge's / cancel's key; executes nothing. A gateway without it (an upstream
   * provider: the API has no such lookup) is asked by sending the same call again under the same key, which it
   * answers with its first result instead of doing it twice.
   */
  inquire?<K extends keyof InquiryResults>(req: {
    readonly operation: K;
    readonly idempotencyKey: string;
  }): Promise<GatewayInquiry<InquiryResults[K]>>;
}

export interface OtpRequest {
  readonly idempotencyKey: string;
  /** the merchant (project) identity: DI differs per merchant for one person */
  readonly merchantId: string;
  readonly person: IdentityPerson;
  readonly type: 'sms' | 'pass';
  readonly clientIp: string;
  readonly siteUrl?: string;
  /** the merchant's order_name and authentication_id, for a gateway that keeps them (an upstream provider) */
  readonly orderName?: string;
  readonly authenticationId?: string;
}

export interface IdentityGateway {
  /**
   * sends the SMS OTP (or pass push); returns the gateway transaction id, and the receipt_id the gateway assigned
   * when it is an upstream provider (the verification then takes it)
   */
  requestOtp(req: OtpRequest): Promise<{
    readonly tid: string;
    readonly receiptId?: string;
    /** the transaction id the merchant is shown (authenticate_data.tid) when it is not `tid`: an upstream provider's PG's */
    readonly shownTid?: string;
  }>;
  resendOtp(req: { readonly tid: string; readonly idempotencyKey: string }): Promise<void>;
  /** throws GatewayDeclinedError when the OTP is wrong or expired */
  confirmOtp(req: { readonly tid: string; readonly otp: string }): Promise<VerifiedPerson>;
}

/** A one-off payment (the sandbox's stand-in for a payment window) and its refund. */
export interface PaymentGateway {
  pay(req: {
    readonly idempotencyKey: string;
    readonly amount: number;
    readonly taxFree: number;
    readonly orderId: string;
    readonly orderName: string;
    readonly escrow: boolean;
    /** where an escrow PG sends its notifications, and the reference it echoes in them */
    readonly notifyUrl?: string;
    readonly merchantRef: string;
    /** the project the PG books the payment to (a real PG's sub-merchant id) */
    readonly merchantId?: string;
  }): Promise<{ readonly gatewayTid: string; readonly approvedAt: Date; readonly approvalNo: string; readonly card: MaskedCard }>;
  cancel(req: GatewayCancelRequest): Promise<GatewayCancelResult>;
}

/** A PG's notification about an escrow order, verified by its signature. */
export interface EscrowNotification {
  readonly notificationId: string;
  readonly gatewayTid: string;
  /** what paygate gave the PG at payment (the receipt id) */
  readonly merchantRef: string;
  readonly event: string;
  readonly occurredAt: Date;
}

export interface EscrowGateway {
  /** registers carrier and tracking number; throws GatewayDeclinedError when the PG refuses */
  startShipping(req: {
    readonly idempotencyKey: string;
    readonly gatewayTid: string;
    readonly shipment: ResolvedShipment;
  }): Promise<{ readonly confirmUrl?: string }>;
  /** the order's escrow status as the PG knows it (reconcile) */
  orderStatus(req: { readonly gatewayTid: string }): Promise<EscrowStatus>;
  /** checks the signature of a notification and reads it; undefined when it is not the PG's */
  verifyNotification(
    headers: Readonly<Record<string, string | string[] | undefined>>,
    rawBody: string,
  ): EscrowNotification | undefined;
  /** whether the first-PG rules (merchant and recipient checks, every field on the wire) apply */
  readonly sendsParties: boolean;
  /**
   * An upstream provider: the merchant's shipping fields go to it as given, and it applies its own rules (its merchant
   * registration, the buyer it saved at payment); paygate checks only the blanks of tracking number and carrier.
   */
  readonly forwardsRequest?: true;
}

/** What one configured PG offers. A capability that is absent is not supported by that PG. */
export interface Gateway {
  readonly name: string;
  readonly card?: CardBillingGateway;
  readonly identity?: IdentityGateway;
  readonly payments?: PaymentGateway;
  readonly escrow?: EscrowGateway;
}

/**
 * The gateway said no (card refused, wrong OTP, ...). Final: retrying will not change the answer.
 * pgErrorCode and pgMessage are the gateway's own code and text, safe to show to the merchant.
 */
export class GatewayDeclinedError extends Error {
  override readonly name = 'GatewayDeclinedError';
  constructor(
    readonly pgErrorCode: string,
    readonly pgMessage: string,
  ) {
    super(`gateway declined: ${pgErrorCode} ${pgMessage}`);
  }
}

/**
 * A gateway's refusal, whichever kind: a PG's (GatewayDeclinedError) or an upstream provider's own catalog error,
 * which the adapters throw as RelayedApiError so it reaches the merchant unchanged (its HTTP status and body). Both
 * are final; undefined for anything else.
 */
export function gatewayDecline(err: unknown): { readonly pgErrorCode: string; readonly pgMessage: string } | undefined {
  if (err instanceof GatewayDeclinedError) return { pgErrorCode: err.pgErrorCode, pgMessage: err.pgMessage };
  if (err instanceof RelayedApiError)
    return { pgErrorCode: err.body.pg_error_code ?? err.body.error_code, pgMessage: err.body.message };
  return undefined;
}

/** The gateway could not be reached or answered 5xx / garbage. Retryable with the same idempotency key. */
export class GatewayUnavailableError extends Error {
  override readonly name = 'GatewayUnavailableError';
  /** the call was cut at its deadline: the PG may have received it and may still act on it (an unknown outcome) */
  readonly deadlineMissed: boolean;
  constructor(message: string, options?: { cause?: unknown; deadlineMissed?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.deadlineMissed = options?.deadlineMissed === true;
  }
}

/**
 * The PG refused the idempotency key as used by another request: a defect on our side (a key derived
 * twice for different requests), never the card's answer.
 */
export class GatewayKeyReusedError extends Error {
  override readonly name = 'GatewayKeyReusedError';
}

/** The configured PGs by name ('sandbox_card', 'sandbox_noauto', 'sandbox_identity', ...). */
export interface GatewayRegistry {
  get(name: string): Gateway | undefined;
  readonly names: readonly string[];
}
