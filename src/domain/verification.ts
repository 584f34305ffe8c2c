// REST identity verification rules: request validation in a fixed, documented order and the response
// shapes of request / resend / confirm / lookup. Pure code: no I/O.
import { ApiError } from './errors.js';
import { isIpOrCidr } from './ip.js';
import { formatOptionalTimestamp, formatTimestamp } from './time.js';

/** The only method of a REST identity verification. */
export const VERIFICATION_METHOD = '본인인증';
export const VERIFICATION_METHOD_SYMBOL = 'auth';
export const VERIFIED_STATUS_LOCALE = '본인인증완료';

export type Carrier = 'SKT' | 'KT' | 'LGT' | 'SKT_MVNO' | 'KT_MVNO' | 'LGT_MVNO';

export const CARRIERS: readonly Carrier[] = ['SKT', 'KT', 'LGT', 'SKT_MVNO', 'KT_MVNO', 'LGT_MVNO'];

const MAX_TEXT = 200;
const MAX_OBJECT_BYTES = 8 * 1024;

type Fields = Record<string, unknown>;

const fieldsOf = (value: unknown): Fields =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Fields) : {};

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;

function optionalObject(body: Fields, field: string): Fields | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new ApiError('INVALID_REQUEST', { message: `${field} must be an object.` });
  }
  if (JSON.stringify(value).length > MAX_OBJECT_BYTES) {
    throw new ApiError('INVALID_REQUEST', { message: `${field} is larger than ${MAX_OBJECT_BYTES} bytes.` });
  }
  return value as Fields;
}

function bounded(value: string, field: string): string {
  if (value.length > MAX_TEXT) throw new ApiError('INVALID_REQUEST', { message: `${field} is longer than ${MAX_TEXT} characters.` });
  return value;
}

/** A local refusal before any gateway call: 2402 with the reason in payload.message and no pg_error_code. */
const localRefusal = (reason: string) => new ApiError('AUTH_CONFIRM_READY_FAILED', { payloadMessage: reason });

export interface VerificationRequest {
  readonly pg: string;
  readonly orderName: string;
  readonly authenticationId: string;
  readonly type: 'sms' | 'pass';
  readonly person: { readonly name: string; readonly phone: string; readonly identityNo: string; readonly carrier: Carrier };
  readonly clientIp: string | undefined;
  readonly siteUrl: string | undefined;
  readonly metadata: Fields;
  readonly extra: Fields;
}

/**
 * Step 1: pg or method empty -> 2400. The caller then resolves the PG: anything but a PG with REST
 * identity verification -> 2406 (HTTP 404); such a PG not enabled for the project -> 2001.
 */
export function parseVerificationPg(rawBody: unknown): { pg: string } {
  const body = fieldsOf(rawBody);
  const pg = text(body.pg);
  if (pg === undefined || text(body.method) === undefined) throw new ApiError('AUTH_NEED_PG_METHOD');
  return { pg: bounded(pg, 'pg') };
}

/**
 * Step 2, after the PG: method not '본인인증' -> 2002; order_name blank -> 2003; authentication_id blank
 * -> 2005; then the local checks that give 2402 with the reason in payload.message: username and phone
 * (falling back to user.username / user.phone), identity_no exactly 7 digits, phone digits, carrier one of
 * six, authenticate_type 'sms' | 'pass', client_ip an IP address.
 */
export function parseVerificationRequest(rawBody: unknown, pg: string): VerificationRequest {
  const body = fieldsOf(rawBody);
  if (text(body.method) !== VERIFICATION_METHOD) {
    throw new ApiError('RC_PM_NOT_FOUND', { message: `The method of an identity verification is '${VERIFICATION_METHOD}'.` });
  }
  const orderName = text(body.order_name);
  if (orderName === undefined) throw new ApiError('RC_NAME_BLANK');
  const authenticationId = text(body.authentication_id);
  if (authenticationId === undefined) throw new ApiError('RC_O_ID_BLANK', { message: 'authentication_id is empty.' });

  const metadata = optionalObject(body, 'metadata') ?? {};
  const extra = optionalObject(body, 'extra') ?? {};
  const user = optionalObject(body, 'user') ?? {};

  const name = text(body.username) ?? text(user.username);
  if (name === undefined) throw localRefusal('username is empty (neither username nor user.username was given).');
  const phone = text(body.phone) ?? text(user.phone);
  if (phone === undefined) throw localRefusal('phone is empty (neither phone nor user.phone was given).');
  if (!/^01\d{8,9}$/.test(phone)) throw localRefusal('phone must be a mobile number of 10-11 digits without hyphens.');

  const identityNo = typeof body.identity_no === 'string' ? body.identity_no : undefined;
  if (identityNo === undefined || identityNo.length !== 7) {
    throw localRefusal('identity_no must be exactly 7 characters: birth date YYMMDD and the first digit of the back part.');
  }
  if (!/^\d{7}$/.test(identityNo)) throw localRefusal('identity_no must be 7 digits.');

  const carrier = body.carrier;
  if (typeof carrier !== 'string' || !(CARRIERS as readonly string[]).includes(carrier)) {
    throw localRefusal(`carrier must be one of ${CARRIERS.join(', ')}.`);
  }

  const type = body.authenticate_type === undefined || body.authenticate_type === null ? 'sms' : body.authenticate_type;
  if (type !== 'sms' && type !== 'pass') throw localRefusal("authenticate_type must be 'sms' or 'pass'.");

  let clientIp: string | undefined;
  if (body.client_ip !== undefined && body.client_ip !== null) {
    clientIp = text(body.client_ip);
    if (clientIp === undefined || clientIp.includes('/') || !isIpOrCidr(clientIp)) throw localRefusal('client_ip must be an IP address.');
  }
  let siteUrl: string | undefined;
  if (body.site_url !== undefined && body.site_url !== null) {
    if (typeof body.site_url !== 'string') throw new ApiError('INVALID_REQUEST', { message: 'site_url must be a string.' });
    siteUrl = bounded(body.site_url, 'site_url');
  }

  return {
    pg,
    orderName: bounded(orderName, 'order_name'),
    authenticationId: bounded(authenticationId, 'authentication_id'),
    type,
    person: { name: bounded(name, 'username'), phone, identityNo, carrier: carrier as Carrier },
    clientIp,
    siteUrl,
    metadata,
    extra,
  };
}

/** receipt_id of resend / confirm bodies. */
export function parseReceiptIdBody(rawBody: unknown): { receiptId: string } {
  const receiptId = text(fieldsOf(rawBody).receipt_id);
  if (receiptId === undefined) throw new ApiError('RC_NOT_FOUND', { message: 'receipt_id is empty.' });
  return { receiptId: bounded(receiptId, 'receipt_id') };
}

/** The OTP of a confirm body: 6 digits for SMS; empty or null for pass. */
export function parseOtp(rawBody: unknown, type: 'sms' | 'pass'): string {
  const otp = fieldsOf(rawBody).otp;
  if (type === 'pass') return typeof otp === 'string' ? otp : '';
  if (typeof otp !== 'string' || !/^\d{6}$/.test(otp)) {
    throw new ApiError('AUTH_CONFIRM_FAILED', { message: 'The verification code must be 6 digits.' });
  }
  return otp;
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

/** What a response is rendered from: the stored receipt, with personal data already opened. */
export interface VerificationView {
  readonly receiptId: string;
  readonly authenticationId: string;
  readonly pg: string;
  readonly status: number;
  readonly metadata: Fields;
  readonly requestedAt: Date;
  readonly authenticatedAt?: Date | null;
  readonly tid?: string | null;
  readonly numberOfRealarms: number;
  readonly gatewayUrl: string;
  readonly person?: {
    readonly name?: string;
    readonly phone?: string;
    readonly birth?: string;
    readonly gender?: number;
    readonly foreigner?: string;
    readonly carrier?: string;
    readonly unique?: string;
    readonly di?: string;
  };
}

const methodFields = {
  method: VERIFICATION_METHOD_SYMBOL,
  method_symbol: VERIFICATION_METHOD_SYMBOL,
  method_origin: VERIFICATION_METHOD,
  method_origin_symbol: VERIFICATION_METHOD_SYMBOL,
} as const;

/** Drops keys whose value is undefined or null: absent keys, never nulls. */
function compact<T extends Fields>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null)) as T;
}

/** Request and resend responses (status 51): tid and number_of_realarms; no status_locale. */
export function renderVerificationRequested(v: VerificationView): Fields {
  return compact({
    receipt_id: v.receiptId,
    authentication_id: v.authenticationId,
    metadata: v.metadata,
    pg: v.pg,
    ...methodFields,
    requested_at: formatTimestamp(v.requestedAt),
    status: v.status,
    authenticate_data: compact({ tid: v.tid, number_of_realarms: v.numberOfRealarms }),
  });
}

/** Confirm and certificate lookup responses: the verified person, never number_of_realarms. */
export function renderVerificationResult(v: VerificationView): Fields {
  const person = v.person ?? {};
  return compact({
    receipt_id: v.receiptId,
    authentication_id: v.authenticationId,
    gateway_url: v.gatewayUrl,
    metadata: v.metadata,
    pg: v.pg,
    ...methodFields,
    status: v.status,
    status_locale: v.status === 12 ? VERIFIED_STATUS_LOCALE : undefined,
    requested_at: formatTimestamp(v.requestedAt),
    authenticated_at: formatOptionalTimestamp(v.authenticatedAt),
    authenticate_data: compact({
      name: person.name,
      phone: person.phone,
      birth: person.birth,
      gender: person.gender,
      foreigner: person.foreigner,
      carrier: person.carrier,
      unique: person.unique,
      di: person.di,
      tid: v.tid ?? '',
    }),
  });
}
