// The error envelope: every failure a client sees is a catalog entry rendered as
// { error_code, code, message, pg_error_code?, payload?: { message }, receipt_id? }, or an upstream provider's error of the same
// catalog relayed as the provider sent it (RelayedApiError). Fastify's own errors
// (bad JSON, media type, body size, schema validation, unknown route) are mapped here too, and
// nothing internal (stack, err.message of an unexpected error) ever reaches the body.
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type ErrorName, RelayedApiError } from '../platform/errors.js';
import { issuesToApiError, type IssueLike } from '../platform/validation.js';
import { GatewayUnavailableError } from '../gateways/index.js';
import { engineUnreachable } from '../platform/temporal/workflow-calls.js';

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
  // the workflow engine restarting: nothing to rely on was done, the same request again learns the outcome
  if (engineUnreachable(error)) {
    return new ApiError('SERVICE_UNAVAILABLE', {
      message: 'The workflow engine is not reachable right now. Retry with the same Idempotency-Key in a moment.',
      cause: error,
    });
  }
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
  if (error.retryAfterSeconds !== undefined) void reply.header('retry-after', String(error.retryAfterSeconds));
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(error.toBody());
}

/** Installs the error handler and the not-found handler on the root instance. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    if (error instanceof RelayedApiError) {
      // the provider's own answer, as the merchant would have had it directly (a 500 among them: 2405, 2411, 2701)
      request.log.info(
        { error_code: error.body.error_code, code: error.body.code, status: error.statusCode },
        'request refused upstream',
      );
      return reply.code(error.statusCode).type('application/json; charset=utf-8').send(error.body);
    }
    const apiError = toApiError(error, request);
    // the request's own mistake (every 4xx, and the spec's 500 for a PG's refusal such as a wrong OTP): one info line
    // with the code; a fault of ours or of a PG (9500, 9502, 9503, 9504, an unreachable PG): the error with its stack
    if (apiError.isRefusal) {
      request.log.info(
        {
          error_code: apiError.errorCode,
          code: apiError.code,
          ...(apiError.statusCode >= 500 ? { status: apiError.statusCode } : {}),
          ...(apiError.pgErrorCode !== undefined ? { pg_error_code: apiError.pgErrorCode } : {}),
        },
        'request rejected',
      );
    } else {
      request.log.error({ err: error, error_code: apiError.errorCode }, 'request failed');
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
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? 'REQUEST_TIMEOUT'
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? 'HEADERS_TOO_LARGE'
        : 'INVALID_REQUEST',
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
