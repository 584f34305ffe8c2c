// Escrow: statuses and their labels, the transitions driven by the PG's buyer events, escrow_data and the
// ESCROW_STATUS_CHANGED payload, and the request rules of shipping start and of the sandbox's payments and
// buyer events, in the spec's order, each field documented where it is checked (the OpenAPI document's bodies are
// derived from them). Pure code: no I/O.
import { z } from 'zod';
import { ApiError } from '../platform/errors.js';
import { formatOptionalTimestamp } from '../platform/time.js';
import {
  describeFields,
  documented,
  fails,
  fields,
  isBlank,
  isRecord,
  isWon,
  MAX_WON,
  merchantId,
  resourceIdDoc,
  validate,
  wonDoc,
} from '../platform/validation.js';

export * from './status.js';
import type { ResolvedShipment, ShipmentBasics } from '../gateways/rules.js';
import type { EscrowData } from '../payments/receipt-rules.js';
import { BUYER_EVENTS, type BuyerEvent, EscrowStatus, escrowStatusLocale, isBuyerEvent } from './status.js';

export interface EscrowDataView {
  readonly status: number;
  readonly shippingStartedAt?: Date | null | undefined;
  readonly receiptConfirmedAt?: Date | null | undefined;
  readonly receiptRevokedAt?: Date | null | undefined;
  /** the first escrow PG's purchase confirmation page; shown only in state 3 */
  readonly confirmUrl?: string | null | undefined;
}

/** escrow_data inside a receipt: keys without a value are left out, never null. */
export function renderEscrowData(view: EscrowDataView): EscrowData {
  const data: EscrowData = { status: view.status, status_locale: escrowStatusLocale(view.status) };
  const shipped = formatOptionalTimestamp(view.shippingStartedAt);
  if (shipped !== undefined) data.shipping_started_at = shipped;
  const confirmed = formatOptionalTimestamp(view.receiptConfirmedAt);
  if (confirmed !== undefined) data.receipt_confirmed_at = confirmed;
  const revoked = formatOptionalTimestamp(view.receiptRevokedAt);
  if (revoked !== undefined) data.receipt_revoked_at = revoked;
  if (view.status === EscrowStatus.ShippingStarted && view.confirmUrl) data.escrow_confirm_url = view.confirmUrl;
  return data;
}

/** webhook_type is filled from API version 2.5; below it the key is present with null. */
export function sendsWebhookType(apiVersion: string): boolean {
  const [major = 0, minor = 0] = apiVersion.split('.').map((part) => Number(part));
  return major > 2 || (major === 2 && minor >= 5);
}

/** The ESCROW_STATUS_CHANGED payload: the receipt plus the escrow keys (the top-level status stays the payment's). */
export function escrowWebhookPayload(
  receipt: Record<string, unknown>,
  escrow: EscrowData,
  project: { readonly applicationId: string; readonly apiVersion: string },
  billingKey: string | null,
): Record<string, unknown> {
  return {
    ...receipt,
    webhook_type: sendsWebhookType(project.apiVersion) ? 'ESCROW_STATUS_CHANGED' : null,
    application_id: project.applicationId,
    escrow_webhook: true,
    escrow_data: escrow,
    billing_key: billingKey,
  };
}

// ---- shipping start

/** A person or company as the shipping request names them; every key optional (fallbacks fill them). */
export interface ShippingParty {
  readonly username?: string;
  readonly name?: string;
  readonly phone?: string;
  readonly address?: string;
  readonly zipcode?: string;
  readonly addr1?: string;
  readonly addr2?: string;
}

/** A shipping start as parsed: the shipment's own fields, and the recipient and sender the merchant gave (if any). */
export interface ShippingStartRequest extends ShipmentBasics {
  readonly user: { readonly username?: string; readonly phone?: string; readonly address?: string; readonly zipcode?: string };
  readonly company: {
    readonly name?: string;
    readonly phone?: string;
    readonly zipcode?: string;
    readonly addr1?: string;
    readonly addr2?: string;
  };
}

const invalid = (message: string) => fails('INVALID_REQUEST', { payloadMessage: message });

function optionalString(field: string, max: number) {
  return documented(
    z.string().max(max).optional(),
    z
      .custom<string>(
        (v) => typeof v === 'string' && v.length <= max,
        invalid(`${field} must be a string of at most ${max} characters.`),
      )
      .nullish()
      .transform((v) => (v === null || v === undefined || v.trim() === '' ? undefined : v.trim())),
  );
}

function requiredString(field: string, blank: 'RC_TRACKING_NUMBER_BLANK' | 'RC_DELIVERY_CORP_BLANK', max: number) {
  return documented(
    z.string().max(max),
    z
      .custom<string>((v) => !isBlank(v), fails(blank))
      .refine((v) => typeof v === 'string' && v.length <= max, invalid(`${field} must be a string of at most ${max} characters.`))
      .transform((v) => v.trim()),
  );
}

/** An optional object of optional fields, documented as the fields it checks. */
const partyOf = <S extends z.core.$ZodLooseShape>(field: string, shape: S, description?: string) => {
  const party = fields(shape);
  const doc = describeFields([party]).optional();
  return documented(
    description === undefined ? doc : doc.describe(description),
    z.custom<unknown>((v) => v === undefined || v === null || isRecord(v), invalid(`${field} must be an object.`)).pipe(party),
  );
};

const shippingBody = fields({
  tracking_number: requiredString('tracking_number', 'RC_TRACKING_NUMBER_BLANK', 100),
  delivery_corp: requiredString('delivery_corp', 'RC_DELIVERY_CORP_BLANK', 50),
  // false is ignored: every shipping start is sent as prepaid
  shipping_prepayment: documented(
    z.boolean().optional(),
    z.custom<boolean>((v) => typeof v === 'boolean', invalid('shipping_prepayment must be a boolean.')).nullish(),
  ),
  shipping_day: documented(
    z.number().int().min(1).max(365).optional(),
    z
      .custom<number>(
        (v) => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 365,
        invalid('shipping_day must be an integer from 1 to 365.'),
      )
      .nullish(),
  ),
  redirect_url: optionalString('redirect_url', 1000),
  user: partyOf(
    'user',
    {
      username: optionalString('user.username', 100),
      phone: optionalString('user.phone', 30),
      address: optionalString('user.address', 500),
      zipcode: optionalString('user.zipcode', 20),
    },
    'the recipient; falls back to the buyer of the payment',
  ),
  company: partyOf('company', {
    name: optionalString('company.name', 100),
    phone: optionalString('company.phone', 30),
    zipcode: optionalString('company.zipcode', 20),
    addr1: optionalString('company.addr1', 500),
    addr2: optionalString('company.addr2', 500),
  }),
});

/** The body of PUT /v2/escrow/shipping/start/{receipt_id} as the OpenAPI document shows it. */
export const shippingStartBody = describeFields([shippingBody]);

const defined = <T extends Record<string, unknown>>(o: T): { [K in keyof T]?: Exclude<T[K], undefined> } =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };

/** PUT /v2/escrow/shipping/start body: 2706, 2707 in that order; receipt_id / receipt_url in the body are ignored. */
export function parseShippingStart(rawBody: unknown): ShippingStartRequest {
  const body = validate(shippingBody, rawBody ?? {});
  return {
    trackingNumber: body.tracking_number,
    deliveryCorp: body.delivery_corp,
    ...(body.shipping_day != null ? { shippingDay: body.shipping_day } : {}),
    ...(body.redirect_url !== undefined ? { redirectUrl: body.redirect_url } : {}),
    user: defined({
      username: body.user.username,
      phone: body.user.phone,
      address: body.user.address,
      zipcode: body.user.zipcode,
    }),
    company: defined({
      name: body.company.name,
      phone: body.company.phone,
      zipcode: body.company.zipcode,
      addr1: body.company.addr1,
      addr2: body.company.addr2,
    }),
  };
}

/** The buyer as saved (sealed) at payment time: the recipient fallbacks of shipping start. */
export interface PaymentBuyer {
  readonly username?: string;
  readonly phone?: string;
  readonly email?: string;
  readonly address?: string;
  readonly zipcode?: string;
}

export interface MerchantRegistration {
  readonly company_name?: string;
  readonly addr1?: string;
  readonly addr2?: string;
  readonly zipcode?: string;
  readonly phone?: string;
}

const filled = (...values: (string | undefined)[]): string =>
  values.find((v) => v !== undefined && v.trim() !== '')?.trim() ?? '';

/**
 * The first escrow PG's checks: the merchant registration first (2708-2712, whatever the request's company
 * says), then the recipient after its fallbacks (2713-2716: user.* or the buyer saved at payment; address and
 * zipcode only from the same keys). The request's company fills the sender, except the zipcode, which is
 * always the registered one.
 */
export function resolveShipmentStrict(
  req: ShippingStartRequest,
  merchant: MerchantRegistration,
  buyer: PaymentBuyer,
): ResolvedShipment {
  const checks: readonly [string, Parameters<typeof blankError>[0]][] = [
    [filled(merchant.company_name), 'RC_PROVIDER_NAME_BLANK'],
    [filled(merchant.addr1), 'RC_PROVIDER_ADDR1_BLANK'],
    [filled(merchant.addr2), 'RC_PROVIDER_ADDR2_BLANK'],
    [filled(merchant.zipcode), 'RC_PROVIDER_ZIP_BLANK'],
    [filled(merchant.phone), 'RC_PROVIDER_PHONE_BLANK'],
  ];
  for (const [value, error] of checks) if (value === '') throw blankError(error);
  const recipient = {
    name: filled(req.user.username, buyer.username),
    phone: filled(req.user.phone, buyer.phone),
    address: filled(req.user.address, buyer.address),
    zipcode: filled(req.user.zipcode, buyer.zipcode),
  };
  if (recipient.name === '') throw blankError('RC_USER_NAME_BLANK');
  if (recipient.phone === '') throw blankError('RC_USER_PHONE_BLANK');
  if (recipient.address === '') throw blankError('RC_USER_ADDRESS_BLANK');
  if (recipient.zipcode === '') throw blankError('RC_USER_ZIPCODE_BLANK');
  return {
    ...shipmentBasics(req),
    recipient,
    sender: {
      name: filled(req.company.name, merchant.company_name),
      phone: filled(req.company.phone, merchant.phone),
      zipcode: filled(merchant.zipcode),
      addr1: filled(req.company.addr1, merchant.addr1),
      addr2: filled(req.company.addr2, merchant.addr2),
    },
  };
}

/** The second escrow PG receives only the tid, tracking number and carrier: no checks, nothing else resolved. */
export function resolveShipmentMinimal(req: ShippingStartRequest): ResolvedShipment {
  return {
    ...shipmentBasics(req),
    recipient: { name: '', phone: '', address: '', zipcode: '' },
    sender: { name: '', phone: '', zipcode: '', addr1: '', addr2: '' },
  };
}

/** An upstream provider's shipment: the merchant's fields as given (blank ones empty); the provider applies its rules. */
export function resolveShipmentAsGiven(req: ShippingStartRequest): ResolvedShipment {
  return {
    ...shipmentBasics(req),
    recipient: {
      name: req.user.username ?? '',
      phone: req.user.phone ?? '',
      address: req.user.address ?? '',
      zipcode: req.user.zipcode ?? '',
    },
    sender: {
      name: req.company.name ?? '',
      phone: req.company.phone ?? '',
      zipcode: req.company.zipcode ?? '',
      addr1: req.company.addr1 ?? '',
      addr2: req.company.addr2 ?? '',
    },
  };
}

function shipmentBasics(req: ShippingStartRequest): ShipmentBasics {
  const { user: _user, company: _company, ...basics } = req;
  return basics;
}

function blankError(
  name:
    | 'RC_PROVIDER_NAME_BLANK'
    | 'RC_PROVIDER_ADDR1_BLANK'
    | 'RC_PROVIDER_ADDR2_BLANK'
    | 'RC_PROVIDER_ZIP_BLANK'
    | 'RC_PROVIDER_PHONE_BLANK'
    | 'RC_USER_NAME_BLANK'
    | 'RC_USER_PHONE_BLANK'
    | 'RC_USER_ADDRESS_BLANK'
    | 'RC_USER_ZIPCODE_BLANK',
): ApiError {
  return new ApiError(name);
}

// ---- sandbox payments and buyer events

export interface SandboxPaymentRequest {
  readonly pg: string;
  readonly price: number;
  readonly taxFree: number;
  readonly orderId: string;
  readonly orderName: string;
  readonly escrow: boolean;
  readonly buyer: PaymentBuyer | undefined;
  readonly metadata: Record<string, unknown> | undefined;
}

const won = (field: string) =>
  z.custom<number>((v) => isWon(v, 0), invalid(`${field} must be a non-negative integer amount in won, at most ${MAX_WON}.`));

const sandboxPaymentBody = fields({
  pg: documented(
    z.string().max(100),
    z.custom<string>((v) => typeof v === 'string' && v.trim() !== '' && v.length <= 100, fails('RC_PG_NOT_FOUND')),
  ),
  price: documented(
    wonDoc(1),
    won('price').refine((v) => v > 0, invalid('price must be at least 1 won.')),
  ),
  order_id: documented(
    z.string().max(100),
    merchantId(
      'order_id',
      z
        .custom<string>((v) => !isBlank(v), fails('RC_O_ID_BLANK'))
        .refine((v) => typeof v === 'string' && v.length <= 100, invalid('order_id must be at most 100 characters.')),
    ),
  ),
  order_name: documented(
    z.string().max(200),
    z
      .custom<string>((v) => !isBlank(v), fails('RC_NAME_BLANK'))
      .refine((v) => typeof v === 'string' && v.length <= 200, invalid('order_name must be at most 200 characters.')),
  ),
  tax_free: documented(wonDoc(0).optional().describe('at most price'), won('tax_free').nullish()),
  escrow: documented(
    z.boolean().optional(),
    z.custom<boolean>((v) => typeof v === 'boolean', invalid('escrow must be a boolean.')).nullish(),
  ),
  user: partyOf('user', {
    username: optionalString('user.username', 100),
    phone: optionalString('user.phone', 30),
    email: optionalString('user.email', 200),
    address: optionalString('user.address', 500),
    zipcode: optionalString('user.zipcode', 20),
  }),
  metadata: documented(
    z.record(z.string(), z.unknown()).optional(),
    z.custom<Record<string, unknown>>((v) => isRecord(v), invalid('metadata must be an object.')).nullish(),
  ),
});

/** The body of POST /sandbox/v1/payments as the OpenAPI document shows it. */
export const sandboxPaymentRequestBody = describeFields([sandboxPaymentBody]);

/** POST /sandbox/v1/payments {pg, price, order_id, order_name, tax_free?, escrow?, user?, metadata?}. */
export function parseSandboxPayment(rawBody: unknown): SandboxPaymentRequest {
  const body = validate(sandboxPaymentBody, rawBody ?? {});
  const taxFree = body.tax_free ?? 0;
  if (taxFree > body.price) throw new ApiError('INVALID_REQUEST', { payloadMessage: 'tax_free must not exceed price.' });
  const buyer = defined({
    username: body.user.username,
    phone: body.user.phone,
    email: body.user.email,
    address: body.user.address,
    zipcode: body.user.zipcode,
  });
  return {
    pg: body.pg.trim(),
    price: body.price,
    taxFree,
    orderId: body.order_id,
    orderName: body.order_name.trim(),
    escrow: body.escrow === true,
    buyer: Object.keys(buyer).length > 0 ? buyer : undefined,
    metadata: body.metadata ?? undefined,
  };
}

export interface SandboxBuyerEventRequest {
  readonly event: BuyerEvent;
  /** the PG sends the same notification twice (a redelivery) */
  readonly duplicate: boolean;
}

const buyerEventBody = fields({
  event: documented(
    z.enum(BUYER_EVENTS),
    z.custom<BuyerEvent>(isBuyerEvent, invalid(`event must be one of ${BUYER_EVENTS.join(', ')}.`)),
  ),
  duplicate: documented(
    z.boolean().optional(),
    z.custom<boolean | undefined>((v) => v === undefined || typeof v === 'boolean', invalid('duplicate must be a boolean.')),
  ),
});

/** The body of POST /sandbox/v1/escrow/{receipt_id}/events as the OpenAPI document shows it. */
export const sandboxBuyerEventBody = describeFields([buyerEventBody]);

/** POST /sandbox/v1/escrow/{receipt_id}/events {event, duplicate?}: an unknown event name is 9400. */
export function parseSandboxBuyerEvent(rawBody: unknown): SandboxBuyerEventRequest {
  const body = validate(buyerEventBody, rawBody);
  return { event: body.event, duplicate: body.duplicate === true };
}

const pgRequestsQuery = fields({
  receipt_id: documented(
    resourceIdDoc,
    z.custom<string>((v) => typeof v === 'string' && v !== '', fails('RC_NOT_FOUND')),
  ),
});

/** The query of GET /sandbox/v1/pg-requests as the OpenAPI document shows it. */
export const pgRequestsQueryDoc = describeFields([pgRequestsQuery]);

/** GET /sandbox/v1/pg-requests ?receipt_id: missing or empty is RC_NOT_FOUND (so is any id that names nothing). */
export function parsePgRequestsQuery(query: unknown): { receiptId: string } {
  return { receiptId: validate(pgRequestsQuery, query).receipt_id };
}

/** The default hours without a PG notification (in 3 or -2) before the workflow asks the PG. */
export const DEFAULT_ESCROW_RECONCILE_HOURS = 72;
