// The error envelope: every failure a client sees is a catalog entry rendered as
// { error_code, code, message, pg_error_code?, payload?: { message } }. Fastify's own errors
// (bad JSON, media type, body size, schema validation, unknown route) are mapped here too, and
// nothing internal (stack, err.message of an unexpected error) ever reaches the body.
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { ApiError, type ErrorName } from '../domain/errors.js';
import { GatewayUnavailableError } from '../gateways/types.js';

/**
 * Per-field error names for validation failures. `blank` when the field is missing, null or an
 * empty/whitespace string; `invalid` for any other failure (falls back to `blank`).
 * Fields are checked in the map's order, so list them in the order the spec checks them.
 */
export type FieldErrors = Readonly<Record<string, { readonly blank: ErrorName; readonly invalid?: ErrorName }>>;

interface IssueLike {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

function isBlank(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

function describeIssue(issue: IssueLike): string {
  const path = issue.path.map(String).join('.');
  return path ? `${path}: ${issue.message}` : issue.message;
}

/** Turns validation issues into one catalog error (the first mapped field wins). */
export function issuesToApiError(issues: readonly IssueLike[], input: unknown, fieldErrors: FieldErrors = {}): ApiError {
  const record = typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as Record<string, unknown>) : undefined;
  if (record === undefined) {
    return new ApiError('INVALID_REQUEST', { payloadMessage: 'the request body must be a JSON object' });
  }
  for (const [field, names] of Object.entries(fieldErrors)) {
    const issue = issues.find((i) => i.path[0] === field);
    if (!issue) continue;
    const name = isBlank(record[field]) ? names.blank : (names.invalid ?? names.blank);
    return new ApiError(name, { payloadMessage: describeIssue(issue) });
  }
  const first = issues[0];
  return new ApiError('INVALID_REQUEST', first ? { payloadMessage: describeIssue(first) } : {});
}

/**
 * Validates `input` with a zod schema; on failure throws the catalog error chosen by `fieldErrors`
 * (or INVALID_REQUEST). Use in handlers: `const body = validate(schema, request.body, { card_no:
 * { blank: 'SUBSCRIBE_CARD_NO_BLANK' } })`.
 */
export function validate<S extends z.ZodType>(schema: S, input: unknown, fieldErrors: FieldErrors = {}): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw issuesToApiError(result.error.issues, input, fieldErrors);
}

interface ValidationItem {
  readonly instancePath?: string;
  readonly message?: string;
}

function validationIssues(items: readonly ValidationItem[]): IssueLike[] {
  return items.map((item) => ({
    path: (item.instancePath ?? '').split('/').filter((s) => s.length > 0),
    message: item.message ?? 'invalid',
  }));
}

const FASTIFY_CODES: Readonly<Record<string, ErrorName>> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_JSON_BODY: 'INVALID_REQUEST',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'INVALID_REQUEST',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'INVALID_REQUEST',
  FST_ERR_BAD_URL: 'INVALID_REQUEST',
  FST_ERR_NOT_FOUND: 'NOT_FOUND',
};

const STATUS_NAMES: Readonly<Record<number, ErrorName>> = {
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
};

/** Maps anything thrown in a request to a catalog error. Unknown errors become INTERNAL_ERROR. */
export function toApiError(error: unknown, request: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error;
  // declines are mapped by each route to its area's code; an unreachable PG is the same everywhere
  if (error instanceof GatewayUnavailableError) return new ApiError('GATEWAY_UNAVAILABLE', { cause: error });
  const fastifyError = error as Partial<FastifyError> | null;
  if (fastifyError && Array.isArray(fastifyError.validation)) {
    const fieldErrors = request.routeOptions.config.fieldErrors ?? {};
    const context = fastifyError.validationContext;
    const input = context === 'params' ? request.params : context === 'querystring' ? request.query : request.body;
    return issuesToApiError(validationIssues(fastifyError.validation as ValidationItem[]), input, fieldErrors);
  }
  const code = fastifyError?.code;
  if (code && FASTIFY_CODES[code]) return new ApiError(FASTIFY_CODES[code], { cause: error });
  const status = fastifyError?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new ApiError(STATUS_NAMES[status] ?? 'INVALID_REQUEST', { cause: error });
  }
  return new ApiError('INTERNAL_ERROR', { cause: error });
}

export function sendApiError(reply: FastifyReply, error: ApiError): FastifyReply {
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(error.toBody());
}

/** Installs the error handler and the not-found handler on the root instance. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const apiError = toApiError(error, request);
    if (apiError.statusCode >= 500) {
      request.log.error({ err: error, error_code: apiError.errorCode }, 'request failed');
    } else {
      request.log.info({ error_code: apiError.errorCode, code: apiError.code }, 'request rejected');
    }
    return sendApiError(reply, apiError);
  });
  app.setNotFoundHandler((request, reply) => {
    return sendApiError(reply, new ApiError('NOT_FOUND', { payloadMessage: `${request.method} ${request.url.split('?')[0]}` }));
  });
}

/**
 * For HTTP that never becomes a request (unparsable request line, header overflow, timeout):
 * answers with the catalog envelope instead of Node's or Fastify's default body, then closes.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const apiError = new ApiError(
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'REQUEST_TIMEOUT' : error.code === 'HPE_HEADER_OVERFLOW' ? 'HEADERS_TOO_LARGE' : 'INVALID_REQUEST',
  );
  const body = JSON.stringify(apiError.toBody());
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${apiError.statusCode} Error\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
