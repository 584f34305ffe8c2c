// The one error catalog. Every error a client can see is one of these entries; routes throw
// `new ApiError('NAME', ...)` and the API error handler renders the envelope.
//
// Codes from the spec keep the spec's number and name. HTTP statuses follow the spec where it
// gives one; elsewhere 400 for a bad request, 401/403 for authentication, 404 for unknown things,
// 5xx for failures on our or the gateway's side.
//
// paygate's own codes (not in the spec) live in the 9000 range, outside every spec range:
//   9400 INVALID_REQUEST          body/query/params malformed (bad JSON, array body, wrong types)
//   9401 ADMIN_UNAUTHORIZED       admin API without a valid ADMIN_TOKEN
//   9403 ACCESS_TOKEN_INVALID     legacy Bearer token unknown or expired
//   9404 NOT_FOUND                no such route or resource outside the spec's codes
//   9405 METHOD_NOT_ALLOWED
//   9408 REQUEST_TIMEOUT          the client did not send the request in time
//   9409 IDEMPOTENCY_IN_PROGRESS  same Idempotency-Key while the first request is still running
//   9410 ORDER_ID_DUPLICATED      order_id already used in this project
//   9413 PAYLOAD_TOO_LARGE
//   9415 UNSUPPORTED_MEDIA_TYPE   only application/json bodies are accepted
//   9422 IDEMPOTENCY_KEY_REUSED   same Idempotency-Key with a different request
//   9423 BILLING_KEY_DESTROYED    the billing key was deleted
//   9424 CANCEL_PRICE_EXCEEDED    cancel amount larger than what remains
//   9425 RECEIPT_NOT_CANCELLABLE
//   9426 PROJECT_NOT_FOUND        admin API: unknown application_id
//   9427 WEBHOOK_DELIVERY_NOT_FAILED  a manual webhook retry of a delivery that has not failed
//   9428 WEBHOOK_DELIVERY_NOT_FOUND   no such webhook delivery
//   9429 TOO_MANY_REQUESTS        too many failed authentications (or token requests); Retry-After says when
//   9430 PAYMENT_DECLINED         the PG refused a charge with a billing key (pg_error_code carried)
//   9431 HEADERS_TOO_LARGE
//   9432 PG_NOTIFICATION_INVALID  a PG notification whose signature (or order) does not check out
//   9440 RESERVE_NOT_FOUND        no such reserved charge
//   9441 RESERVE_NOT_REVOKABLE    the reserved charge was revoked or has started executing
//   9442 RESERVE_EXECUTE_AT_INVALID  reserve_execute_at unparsable, in the past or more than 1 year ahead
//   9460 SANDBOX_CLOCK_INVALID    a sandbox clock advance that is not forward (seconds not a positive integer, to not later)
//   9470 SANDBOX_FAULT_INVALID    a sandbox fault body that is malformed (unknown field, count not 1..100)
//   9471 SANDBOX_FAULT_PG_UNKNOWN the fault's pg is not a sandbox PG of the project
//   9472 SANDBOX_FAULT_OPERATION_UNSUPPORTED  the PG has no such operation
//   9473 SANDBOX_FAULT_KIND_UNSUPPORTED  the fault does not apply to the operation (drop: escrow_notification only)
//   9474 SANDBOX_FAULTS_TOO_MANY  the project already has 100 armed faults
//   9485 DASHBOARD_FORM_EXPIRED   a dashboard form without its session's CSRF token (expired page, another site's form)
//   9486 DASHBOARD_SIGN_IN_REQUIRED  a dashboard page without a signed-in session (or no project picked)
//   9450 SCHEDULE_NOT_FOUND       no such subscription schedule
//   9451 SCHEDULE_STATE_INVALID   the schedule's status does not allow it (pause a cancelled one, resume an active one, ...)
//   9475 PG_KEY_REUSED            the PG refused a charge's / cancel's idempotency key as used by another request (our defect)
//   9476 UPSTREAM_URL_INVALID     an upstream provider's base_url / message_url that the mode's policy refuses
//   9477 UPSTREAM_NOT_CONFIGURED  the project has no upstream provider (its configuration, its notifications)
//   9478 UPSTREAM_KEYS_REFUSED    the upstream provider refused the project's keys there (1204 / 1216): fix the configuration
//   9479 VERIFICATION_SEND_LIMIT  a verification SMS / resend over paygate's per-phone or per-project cap; Retry-After says when
//   9480 UPSTREAM_ANSWER_MISMATCH the upstream provider answered something other than what was asked (another price, order_id,
//                                 PG or billing key): recorded as the provider made it, marked for attention; receipt_id carried
//   9481 UPSTREAM_UNAVAILABLE     the project's upstream provider is failing (its circuit is open): nothing was sent; Retry-After says when
//   9482 UPSTREAM_ID_REUSED       the upstream provider answered with a receipt_id / billing_key it already gave another record of the project
//   9500 INTERNAL_ERROR
//   9502 GATEWAY_UNAVAILABLE      the PG could not be reached or answered garbage
//   9503 SERVICE_UNAVAILABLE
//   9504 GATEWAY_TIMEOUT          the PG did not answer in time; retry with the same key

export interface CatalogEntry {
  readonly code: number;
  readonly status: number;
  readonly message: string;
}

export const errorCatalog = {
  // Authentication
  API_ONLY_SELLER: { code: 600, status: 403, message: 'This API is available to seller accounts only.' },
  APP_FIREWALL_BLOCKED: { code: 1203, status: 403, message: 'The requesting IP is not allowed.' },
  APP_SK_NOT_MATCHED: { code: 1204, status: 401, message: 'The secret key does not match.' },
  APP_AT_AUTHORIZE_TYPE_INVALID: {
    code: 1205,
    status: 401,
    message: 'The Authorization header must start with Basic or Bearer.',
  },
  APP_AT_AUTHORIZE_HEADER_BLANK: { code: 1206, status: 401, message: 'The Authorization header is missing.' },
  APP_CLIENT_KEY_NOT_FOUND: { code: 1216, status: 401, message: 'The client key is unknown.' },
  APP_CLIENT_KEY_EXPIRED: { code: 1218, status: 401, message: 'The key has passed its validity period.' },
  API_ROLE_NOT_SUPPORT: { code: 1221, status: 403, message: 'This API is not supported for the key.' },
  API_SCOPE_INVALID: { code: 1222, status: 401, message: 'The key has not been granted the scope of this API.' },
  APP_KEY_CHAIN_EXPIRED: { code: 1224, status: 401, message: 'The client key has expired.' },
  APP_KEY_CHAIN_SESSION_INVALID: { code: 1225, status: 403, message: 'The resource belongs to another project key.' },

  // Receipts (shared by key-in, verification and escrow)
  RC_NOT_FOUND: { code: 2000, status: 404, message: 'The receipt was not found.' },
  RC_PG_NOT_FOUND: { code: 2001, status: 404, message: 'The requested PG was not found or is not active.' },
  RC_PM_NOT_FOUND: { code: 2002, status: 404, message: 'The requested method was not found for the PG.' },
  RC_NAME_BLANK: { code: 2003, status: 400, message: 'order_name is empty.' },
  RC_O_ID_BLANK: { code: 2005, status: 400, message: 'The merchant-assigned ID is empty.' },
  RC_RESOURCE_NOT_CONFIG: { code: 2017, status: 500, message: 'The PG configuration is unusable.' },
  RC_NOT_SUBSCRIBE: { code: 2057, status: 400, message: 'This pg and method combination does not support billing key issuance.' },
  RC_ONLY_REST_API: { code: 2058, status: 400, message: "Only the REST method '카드자동(REST)' is supported." },
  RC_NOT_AUTH: { code: 2064, status: 400, message: 'The receipt is not a verification receipt.' },
  RC_NOT_CONFIRMED: { code: 2069, status: 400, message: 'The payment is not in complete status.' },
  RC_INVALID_EXP_MONTH: { code: 2084, status: 400, message: 'The card expiry month must be between 01 and 12.' },

  // Key-in
  SUBSCRIBE_NEED_PG_METHOD: { code: 2300, status: 400, message: 'pg or method is missing.' },
  SUBSCRIBE_REQUEST_FAILED: { code: 2301, status: 500, message: 'The billing key request failed.' },
  SUBSCRIBE_PUBLISH_FAILED: { code: 2304, status: 400, message: 'The PG refused the billing key issuance.' },
  SUBSCRIBE_BK_NOT_FOUND: { code: 2309, status: 404, message: 'The billing key was not found.' },
  SUBSCRIBE_CARD_NO_BLANK: { code: 2311, status: 400, message: 'card_no is empty.' },
  SUBSCRIBE_CARD_PW_BLANK: { code: 2312, status: 400, message: 'card_pw is empty.' },
  SUBSCRIBE_CARD_IDENTITY_BLANK: { code: 2313, status: 400, message: 'card_identity_no is empty.' },
  SUBSCRIBE_CARD_EX_YEAR_BLANK: { code: 2314, status: 400, message: 'card_expire_year is empty.' },
  SUBSCRIBE_CARD_EX_MONTH_BLANK: { code: 2315, status: 400, message: 'card_expire_month is empty.' },

  // Identity verification
  AUTH_NEED_PG_METHOD: { code: 2400, status: 400, message: 'pg or method is empty.' },
  AUTH_REQUEST_FAILED: { code: 2401, status: 500, message: 'Creating the verification request failed.' },
  AUTH_CONFIRM_READY_FAILED: { code: 2402, status: 400, message: 'Sending the verification code failed.' },
  AUTH_NOT_READY: { code: 2404, status: 400, message: 'The verification is not awaiting confirmation.' },
  AUTH_CONFIRM_FAILED: { code: 2405, status: 500, message: 'The verification code is wrong or expired.' },
  AUTH_CONFIRM_METHOD_NOT_FOUND: { code: 2406, status: 404, message: 'The PG has no REST verification.' },
  AUTH_NOT_FOUND: { code: 2407, status: 404, message: 'The verification was not found.' },
  AUTH_NOT_CONFIRMED: { code: 2408, status: 400, message: 'The verification is not confirmed.' },
  AUTH_EXPIRED: { code: 2409, status: 400, message: 'The verification result is no longer available (30 minutes passed).' },
  AUTH_REALARM_FAILED: { code: 2411, status: 500, message: 'Resending the verification code failed.' },
  AUTH_REALARM_NOT_ABLE: { code: 2412, status: 400, message: 'Only SMS verifications can be resent.' },

  // Escrow
  RC_ESCROW_NOT_READY: { code: 2700, status: 400, message: 'The escrow is not waiting for shipping.' },
  RC_ESCROW_SHIPPING_START_FAILED: { code: 2701, status: 500, message: 'The PG refused the shipping start.' },
  RC_ESCROW_SHIPPING_NO_METHOD: { code: 2702, status: 404, message: 'The PG has no shipping start.' },
  RC_NOT_ESCROW: { code: 2703, status: 400, message: 'The payment is not an escrow payment.' },
  RC_TRACKING_NUMBER_BLANK: { code: 2706, status: 400, message: 'tracking_number is empty.' },
  RC_DELIVERY_CORP_BLANK: { code: 2707, status: 400, message: 'delivery_corp is empty.' },
  RC_PROVIDER_NAME_BLANK: { code: 2708, status: 400, message: 'The merchant registered company name is empty.' },
  RC_PROVIDER_ADDR1_BLANK: { code: 2709, status: 400, message: 'The merchant registered address 1 is empty.' },
  RC_PROVIDER_ADDR2_BLANK: { code: 2710, status: 400, message: 'The merchant registered address 2 is empty.' },
  RC_PROVIDER_ZIP_BLANK: { code: 2711, status: 400, message: 'The merchant registered postal code is empty.' },
  RC_PROVIDER_PHONE_BLANK: { code: 2712, status: 400, message: 'The merchant registered main phone is empty.' },
  RC_USER_NAME_BLANK: { code: 2713, status: 400, message: 'The recipient name is empty.' },
  RC_USER_PHONE_BLANK: { code: 2714, status: 400, message: 'The recipient phone is empty.' },
  RC_USER_ADDRESS_BLANK: { code: 2715, status: 400, message: 'The recipient address is empty.' },
  RC_USER_ZIPCODE_BLANK: { code: 2716, status: 400, message: 'The recipient postal code is empty.' },

  // Messaging webhook
  WEBHOOK_URL_INVALID: { code: 3028, status: 400, message: 'The webhook URL is not acceptable.' },
  WEBHOOK_NOT_CONFIGURED: { code: 3029, status: 400, message: 'No webhook receiving URL is stored.' },

  // paygate's own (see the table above)
  INVALID_REQUEST: { code: 9400, status: 400, message: 'The request is malformed.' },
  ADMIN_UNAUTHORIZED: { code: 9401, status: 401, message: 'A valid admin token is required.' },
  ACCESS_TOKEN_INVALID: { code: 9403, status: 401, message: 'The access token is unknown or expired.' },
  NOT_FOUND: { code: 9404, status: 404, message: 'Not found.' },
  METHOD_NOT_ALLOWED: { code: 9405, status: 405, message: 'Method not allowed.' },
  REQUEST_TIMEOUT: { code: 9408, status: 408, message: 'The request was not received in time.' },
  IDEMPOTENCY_IN_PROGRESS: {
    code: 9409,
    status: 409,
    message:
      'A request with this Idempotency-Key is still in progress. Retry with the same Idempotency-Key in a moment to get its answer.',
  },
  ORDER_ID_DUPLICATED: { code: 9410, status: 409, message: 'order_id has already been used.' },
  PAYLOAD_TOO_LARGE: { code: 9413, status: 413, message: 'The request body is too large.' },
  UNSUPPORTED_MEDIA_TYPE: { code: 9415, status: 415, message: 'Only application/json request bodies are accepted.' },
  IDEMPOTENCY_KEY_REUSED: { code: 9422, status: 422, message: 'This Idempotency-Key was used with a different request.' },
  BILLING_KEY_DESTROYED: { code: 9423, status: 400, message: 'The billing key has been destroyed.' },
  CANCEL_PRICE_EXCEEDED: { code: 9424, status: 400, message: 'The cancel amount exceeds the remaining amount.' },
  RECEIPT_NOT_CANCELLABLE: { code: 9425, status: 400, message: 'The receipt cannot be cancelled.' },
  PROJECT_NOT_FOUND: { code: 9426, status: 404, message: 'The project was not found.' },
  WEBHOOK_DELIVERY_NOT_FAILED: { code: 9427, status: 409, message: 'Only a failed webhook delivery can be retried.' },
  WEBHOOK_DELIVERY_NOT_FOUND: { code: 9428, status: 404, message: 'The webhook delivery was not found.' },
  TOO_MANY_REQUESTS: { code: 9429, status: 429, message: 'Too many requests; retry after the Retry-After seconds.' },
  PAYMENT_DECLINED: { code: 9430, status: 400, message: 'The PG refused the payment.' },
  HEADERS_TOO_LARGE: { code: 9431, status: 431, message: 'The request headers are too large.' },
  PG_NOTIFICATION_INVALID: { code: 9432, status: 401, message: 'The PG notification is not signed by the PG.' },
  RESERVE_NOT_FOUND: { code: 9440, status: 404, message: 'The reserved charge was not found.' },
  RESERVE_NOT_REVOKABLE: { code: 9441, status: 409, message: 'The reserved charge was already revoked or executed.' },
  RESERVE_EXECUTE_AT_INVALID: { code: 9442, status: 400, message: 'reserve_execute_at must be within the next year.' },
  SCHEDULE_NOT_FOUND: { code: 9450, status: 404, message: 'The subscription schedule was not found.' },
  SCHEDULE_STATE_INVALID: { code: 9451, status: 409, message: 'The subscription schedule does not allow this in its status.' },
  SANDBOX_CLOCK_INVALID: {
    code: 9460,
    status: 400,
    message: 'The sandbox clock only moves forward: seconds must be a positive whole number, or to a later time.',
  },
  SANDBOX_FAULT_INVALID: { code: 9470, status: 400, message: 'The sandbox fault is malformed.' },
  SANDBOX_FAULT_PG_UNKNOWN: { code: 9471, status: 400, message: 'The pg is not a sandbox PG of this project.' },
  SANDBOX_FAULT_OPERATION_UNSUPPORTED: { code: 9472, status: 400, message: 'The sandbox PG has no such operation.' },
  SANDBOX_FAULT_KIND_UNSUPPORTED: { code: 9473, status: 400, message: 'This fault does not apply to the operation.' },
  SANDBOX_FAULTS_TOO_MANY: { code: 9474, status: 409, message: 'The project has 100 armed sandbox faults; disarm them first.' },
  DASHBOARD_FORM_EXPIRED: { code: 9485, status: 403, message: 'The form has expired; reload the page and try again.' },
  DASHBOARD_SIGN_IN_REQUIRED: { code: 9486, status: 401, message: 'Sign in to the dashboard first.' },
  PG_KEY_REUSED: {
    code: 9475,
    status: 500,
    message: 'The PG refused this request as a reuse of another one (an internal error, reported); retry later.',
  },
  UPSTREAM_URL_INVALID: { code: 9476, status: 400, message: 'The upstream provider URL is not acceptable.' },
  UPSTREAM_NOT_CONFIGURED: { code: 9477, status: 404, message: 'The project has no upstream provider configured.' },
  UPSTREAM_KEYS_REFUSED: {
    code: 9478,
    status: 502,
    message: "The upstream provider refused this project's keys; check the project's upstream configuration.",
  },
  VERIFICATION_SEND_LIMIT: {
    code: 9479,
    status: 429,
    message: 'Too many verification messages; retry after the Retry-After seconds.',
  },
  UPSTREAM_ANSWER_MISMATCH: {
    code: 9480,
    status: 502,
    message:
      "The provider's answer does not match the request. The payment is recorded as the provider made it and marked for attention: look up the receipt, and cancel it if it is wrong.",
  },
  UPSTREAM_ID_REUSED: {
    code: 9482,
    status: 502,
    message: 'The upstream provider answered with an id it already gave another record of this project.',
  },
  UPSTREAM_UNAVAILABLE: {
    code: 9481,
    status: 503,
    message:
      "The project's upstream provider is not answering; nothing was sent to it. Retry after the Retry-After seconds with the same order_id.",
  },
  INTERNAL_ERROR: { code: 9500, status: 500, message: 'An internal error occurred.' },
  GATEWAY_UNAVAILABLE: { code: 9502, status: 502, message: 'The PG could not be reached. Retry with the same Idempotency-Key.' },
  SERVICE_UNAVAILABLE: { code: 9503, status: 503, message: 'The service is not ready.' },
  GATEWAY_TIMEOUT: { code: 9504, status: 504, message: 'The PG did not answer in time. Retry with the same Idempotency-Key.' },
} as const satisfies Record<string, CatalogEntry>;

export type ErrorName = keyof typeof errorCatalog;

/** For names that crossed a boundary as strings (a workflow's ApplicationFailure type). */
export function isErrorName(value: string): value is ErrorName {
  return Object.hasOwn(errorCatalog, value);
}

/**
 * The catalog codes the spec answers with HTTP 500 that also stand for a refusal of the request itself: the PG
 * judged it and said no (a wrong or expired OTP, a refused resend, billing key or shipping start). See isRefusal.
 */
export const REFUSALS_ANSWERED_5XX: ReadonlySet<ErrorName> = new Set<ErrorName>([
  'SUBSCRIBE_REQUEST_FAILED',
  'AUTH_REQUEST_FAILED',
  'AUTH_CONFIRM_FAILED',
  'AUTH_REALARM_FAILED',
  'RC_ESCROW_SHIPPING_START_FAILED',
]);

export interface ApiErrorOptions {
  /** replaces the catalog message; must never contain card data or internal details */
  readonly message?: string;
  readonly pgErrorCode?: string;
  readonly payloadMessage?: string;
  /** whole seconds after which a retry may succeed: sent as the Retry-After header (a 429) */
  readonly retryAfterSeconds?: number;
  /** internal cause, logged by the error handler, never sent to the client */
  readonly cause?: unknown;
  /** the request's own mistake whatever the status (a 500 the spec gives to a malformed OTP): logged as a refusal */
  readonly refused?: boolean;
  /**
   * the receipt the failed operation left for paygate to settle (a charge or cancel whose PG answer was lost): sent as
   * `receipt_id` so the merchant can poll `GET /v2/receipt/{receipt_id}`
   */
  readonly receiptId?: string;
}

export interface ErrorBody {
  error_code: ErrorName;
  code: number;
  message: string;
  pg_error_code?: string;
  payload?: { message: string };
  receipt_id?: string;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly errorCode: ErrorName;
  readonly code: number;
  readonly statusCode: number;
  readonly pgErrorCode: string | undefined;
  readonly payloadMessage: string | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly receiptId: string | undefined;
  readonly #refused: boolean;

  constructor(errorCode: ErrorName, options: ApiErrorOptions = {}) {
    const entry: CatalogEntry = errorCatalog[errorCode];
    super(options.message ?? entry.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.errorCode = errorCode;
    this.code = entry.code;
    this.statusCode = entry.status;
    this.pgErrorCode = options.pgErrorCode;
    this.payloadMessage = options.payloadMessage;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.receiptId = options.receiptId;
    this.#refused = options.refused === true;
  }

  /** The same error naming the receipt the operation left pending (see ApiErrorOptions.receiptId). */
  withReceipt(receiptId: string): ApiError {
    return new ApiError(this.errorCode, {
      message: this.message,
      pgErrorCode: this.pgErrorCode,
      payloadMessage: this.payloadMessage,
      retryAfterSeconds: this.retryAfterSeconds,
      cause: this.cause,
      refused: this.#refused,
      receiptId,
    });
  }

  /**
   * Whether the answer is the request's doing (the merchant's or the customer's), not a fault of paygate or of a PG:
   * every 4xx, and the 5xx the spec gives to a refusal (REFUSALS_ANSWERED_5XX) when it carries the PG's refusal code
   * (a wrong OTP, a declined resend or shipping start) or a message telling the merchant what to change (a limit).
   * The same codes without either are the PG's or paygate's failure ("could not be reached") and stay faults.
   */
  get isRefusal(): boolean {
    if (this.statusCode < 500 || this.#refused) return true;
    return REFUSALS_ANSWERED_5XX.has(this.errorCode) && (this.pgErrorCode !== undefined || this.payloadMessage !== undefined);
  }

  toBody(): ErrorBody {
    const body: ErrorBody = { error_code: this.errorCode, code: this.code, message: this.message };
    if (this.pgErrorCode !== undefined) body.pg_error_code = this.pgErrorCode;
    if (this.payloadMessage !== undefined) body.payload = { message: this.payloadMessage };
    if (this.receiptId !== undefined) body.receipt_id = this.receiptId;
    return body;
  }
}

export function isApiError(value: unknown): value is ApiError {
  return value instanceof ApiError;
}

/**
 * An error of this same catalog answered by an upstream provider (src/upstream), relayed to the merchant unchanged:
 * the body's keys as the provider sent them and its HTTP status, so a merchant sees what it would see calling the
 * provider directly. Its error_code may be one paygate's catalog does not list.
 */
export class RelayedApiError extends Error {
  override readonly name = 'RelayedApiError';
  constructor(
    readonly statusCode: number,
    readonly body: {
      readonly error_code: string;
      readonly code?: number;
      readonly message: string;
      readonly pg_error_code?: string;
      readonly payload?: Readonly<Record<string, unknown>>;
    },
  ) {
    super(`relayed from the upstream provider: ${body.error_code}`);
  }
}
