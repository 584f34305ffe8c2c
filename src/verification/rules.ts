// REST identity verification rules: request validation in a fixed, documented order (each field documented where
// it is first checked, for the OpenAPI document) and the response shapes of request / resend / confirm / lookup.
// Pure code: no I/O.
import { z } from 'zod';
import { type Carrier, CARRIERS, type IdentityPerson } from '../gateways/rules.js';
import { isIpOrCidr } from '../platform/ip.js';
import { formatOptionalTimestamp, formatTimestamp } from '../platform/time.js';
import { describeFields, documented, fails, fields, isRecord, merchantId, validate } from '../platform/validation.js';

/** The only method of a REST identity verification. */
export const VERIFICATION_METHOD = '본인인증';
export const VERIFICATION_METHOD_SYMBOL = 'auth';
export const VERIFIED_STATUS_LOCALE = '본인인증완료';

const MAX_TEXT = 200;
const MAX_OBJECT_BYTES = 8 * 1024;

type Fields = Record<string, unknown>;

const invalid = (message: string) => fails('INVALID_REQUEST', { message });

/** A local refusal before any gateway call: 2402 with the reason in payload.message and no pg_error_code. */
const localRefusal = (reason: string) => fails('AUTH_CONFIRM_READY_FAILED', { payloadMessage: reason });

const isPresent = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

/** A non-blank string, trimmed; anything else fails with `failure`. */
function trimmedText(failure: ReturnType<typeof fails>) {
  return z.custom<string>(isPresent, failure).transform((value) => value.trim());
}

/** An object of at most 8 KB of JSON text, kept as given; absent or null is {}. */
function optionalObject(field: string) {
  return z
    .custom<Fields>(isRecord, invalid(`${field} must be an object.`))
    .refine(
      (value) => JSON.stringify(value).length <= MAX_OBJECT_BYTES,
      invalid(`${field} is larger than ${MAX_OBJECT_BYTES} bytes.`),
    )
    .nullish()
    .transform((value) => value ?? {});
}

function atMost(field: string) {
  return z.string().refine((value) => value.length <= MAX_TEXT, invalid(`${field} is longer than ${MAX_TEXT} characters.`));
}

export interface VerificationRequest {
  readonly pg: string;
  readonly orderName: string;
  readonly authenticationId: string;
  readonly type: 'sms' | 'pass';
  readonly person: IdentityPerson;
  readonly clientIp: string | undefined;
  readonly siteUrl: string | undefined;
  readonly metadata: Fields;
  readonly extra: Fields;
}

// pg's length is checked only once both pg and method are there.
const pgAndMethod = fields({
  pg: documented(z.string().max(MAX_TEXT), trimmedText(fails('AUTH_NEED_PG_METHOD'))),
  method: documented(z.string().describe(VERIFICATION_METHOD), trimmedText(fails('AUTH_NEED_PG_METHOD'))),
}).refine((body) => body.pg.length <= MAX_TEXT, invalid(`pg is longer than ${MAX_TEXT} characters.`));

/**
 * Step 1: pg or method empty -> 2400. The caller then resolves the PG: anything but a PG with REST
 * identity verification -> 2406 (HTTP 404); such a PG not enabled for the project -> 2001.
 */
export function parseVerificationPg(rawBody: unknown): { pg: string } {
  return { pg: validate(pgAndMethod, rawBody).pg };
}

// The request checks come in three stages, as the spec orders them: the request's own fields, then the
// person (username and phone fall back to user.username / user.phone), then the lengths of the texts kept.
const requestFields = fields({
  method: z.custom(
    (method) => isPresent(method) && method.trim() === VERIFICATION_METHOD,
    fails('RC_PM_NOT_FOUND', { message: `The method of an identity verification is '${VERIFICATION_METHOD}'.` }),
  ),
  order_name: documented(z.string().max(MAX_TEXT), trimmedText(fails('RC_NAME_BLANK'))),
  authentication_id: documented(
    z.string().max(MAX_TEXT),
    trimmedText(fails('RC_O_ID_BLANK', { message: 'authentication_id is empty.' })),
  ),
  metadata: documented(z.record(z.string(), z.unknown()).optional(), optionalObject('metadata')),
  extra: documented(z.record(z.string(), z.unknown()).optional(), optionalObject('extra')),
  user: documented(
    z.looseObject({ username: z.string().optional(), phone: z.string().optional() }).optional(),
    optionalObject('user'),
  ),
}).transform(({ user, ...body }) => ({
  ...body,
  username: isPresent(body.username) ? body.username : user.username,
  phone: isPresent(body.phone) ? body.phone : user.phone,
}));

const personFields = fields({
  username: documented(
    z.string().max(MAX_TEXT).optional().describe('or user.username'),
    trimmedText(localRefusal('username is empty (neither username nor user.username was given).')),
  ),
  phone: documented(
    z.string().optional().describe('or user.phone'),
    trimmedText(localRefusal('phone is empty (neither phone nor user.phone was given).')).refine(
      (phone) => /^01\d{8,9}$/.test(phone),
      localRefusal('phone must be a mobile number of 10-11 digits without hyphens.'),
    ),
  ),
  identity_no: documented(
    z.string().describe('birth date YYMMDD and the first digit of the rest'),
    z
      .custom<string>(
        (identityNo) => typeof identityNo === 'string' && identityNo.length === 7,
        localRefusal('identity_no must be exactly 7 characters: birth date YYMMDD and the first digit of the back part.'),
      )
      .refine((identityNo) => /^\d{7}$/.test(identityNo), localRefusal('identity_no must be 7 digits.')),
  ),
  carrier: documented(
    z.string().describe(CARRIERS.join(', ')),
    z.custom<Carrier>(
      (carrier) => typeof carrier === 'string' && (CARRIERS as readonly string[]).includes(carrier),
      localRefusal(`carrier must be one of ${CARRIERS.join(', ')}.`),
    ),
  ),
  authenticate_type: documented(
    z.enum(['sms', 'pass']).optional(),
    z
      .custom<'sms' | 'pass'>(
        (type) => type === 'sms' || type === 'pass',
        localRefusal("authenticate_type must be 'sms' or 'pass'."),
      )
      .nullish()
      .transform((type) => type ?? 'sms'),
  ),
  client_ip: documented(
    z.string().optional().describe("the person's IP address; default: the request's"),
    trimmedText(localRefusal('client_ip must be an IP address.'))
      .refine((ip) => !ip.includes('/') && isIpOrCidr(ip), localRefusal('client_ip must be an IP address.'))
      .nullish()
      .transform((ip) => ip ?? undefined),
  ),
  site_url: documented(
    z.string().max(MAX_TEXT).optional(),
    z
      .custom<string>((url) => typeof url === 'string', invalid('site_url must be a string.'))
      .pipe(atMost('site_url'))
      .nullish()
      .transform((url) => url ?? undefined),
  ),
});

const keptTexts = fields({
  order_name: atMost('order_name'),
  authentication_id: merchantId('authentication_id', atMost('authentication_id')),
  username: atMost('username'),
});

/** The body of POST /v2/request/authentication as the OpenAPI document shows it: the fields of both steps. */
export const verificationRequestBody = describeFields([pgAndMethod, requestFields, personFields, keptTexts]);

/**
 * Step 2, after the PG: method not '본인인증' -> 2002; order_name blank -> 2003; authentication_id blank
 * -> 2005; then the local checks that give 2402 with the reason in payload.message: username and phone
 * (falling back to user.username / user.phone), identity_no exactly 7 digits, phone digits, carrier one of
 * six, authenticate_type 'sms' | 'pass', client_ip an IP address.
 */
export function parseVerificationRequest(rawBody: unknown, pg: string): VerificationRequest {
  const request = validate(requestFields, rawBody);
  const person = validate(personFields, request);
  const texts = validate(keptTexts, person);
  return {
    pg,
    orderName: texts.order_name,
    authenticationId: texts.authentication_id,
    type: person.authenticate_type,
    person: { name: texts.username, phone: person.phone, identityNo: person.identity_no, carrier: person.carrier },
    clientIp: person.client_ip,
    siteUrl: person.site_url,
    metadata: request.metadata,
    extra: request.extra,
  };
}

const receiptIdBody = fields({
  receipt_id: documented(
    z.string().max(MAX_TEXT),
    trimmedText(fails('RC_NOT_FOUND', { message: 'receipt_id is empty.' })).pipe(atMost('receipt_id')),
  ),
});

/** The body of POST /v2/authenticate/realarm as the OpenAPI document shows it. */
export const receiptIdRequestBody = describeFields([receiptIdBody]);

/** receipt_id of resend / confirm bodies. */
export function parseReceiptIdBody(rawBody: unknown): { receiptId: string } {
  return { receiptId: validate(receiptIdBody, rawBody).receipt_id };
}

/** A pass confirm carries no code: any string is passed on, anything else is ''. */
const passOtp = fields({ otp: z.unknown().transform((otp) => (typeof otp === 'string' ? otp : '')) });

const smsOtp = fields({
  otp: documented(
    z.string().optional().describe('the SMS code (not for pass)'),
    z.custom<string>(
      (otp) => typeof otp === 'string' && /^\d{6}$/.test(otp),
      fails('AUTH_CONFIRM_FAILED', { message: 'The verification code must be 6 digits.' }),
    ),
  ),
});

/** The body of POST /v2/authenticate/confirm as the OpenAPI document shows it. */
export const confirmRequestBody = describeFields([receiptIdBody, smsOtp, passOtp]);

/** The OTP of a confirm body: 6 digits for SMS; empty or null for pass. */
export function parseOtp(rawBody: unknown, type: 'sms' | 'pass'): string {
  return validate(type === 'pass' ? passOtp : smsOtp, rawBody).otp;
}

const MOBILE_PHONE = /^01\d{8,9}$/;

const inboxQuery = fields({
  phone: documented(
    z.string().regex(MOBILE_PHONE),
    z.custom<string>(
      (phone) => typeof phone === 'string' && MOBILE_PHONE.test(phone),
      fails('INVALID_REQUEST', { message: 'phone must be a mobile number of 10-11 digits.' }),
    ),
  ),
});

/** The query of GET /sandbox/v1/sms as the OpenAPI document shows it. */
export const sandboxInboxQueryDoc = describeFields([inboxQuery]);

/** GET /sandbox/v1/sms ?phone: a mobile number of 10-11 digits (9400 otherwise). */
export function parseSandboxInboxQuery(query: unknown): { phone: string } {
  return { phone: validate(inboxQuery, query).phone };
}

/** The verified person as stored, opened for the one response that shows it. */
export interface OpenedPerson {
  readonly name?: string;
  readonly phone?: string;
  readonly birth?: string;
  readonly gender?: number;
  readonly foreigner?: string;
  readonly carrier?: string;
  /** absent once purged */
  readonly unique?: string;
  readonly di?: string;
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
  readonly person?: OpenedPerson;
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
