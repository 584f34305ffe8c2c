// The HTTP client of upstream providers: the spec's wire format, as the API family's official Node client speaks
// it. Every call carries `Authorization: Basic base64(client_key:secret_key)` (spec "Authentication" 1, no token
// exchange) and, on a POST, the caller's Idempotency-Key, derived from the operation's business key so that the
// same operation sent again is the same request to the provider. Each call has one deadline for the whole of it
// (connect, headers and every byte of the body: a provider that trickles its answer is cut there, not after its
// silences add up), set per operation (UPSTREAM_DEADLINE_MS, UPSTREAM_DEADLINES_MS); a call cut at it is an unknown
// outcome (GatewayUnavailableError with deadlineMissed), handled as a lost answer. It sends through the one outbound
// HTTP client (src/gateways/outbound-http.ts: its own Agent, no redirects, a bounded response body); in production
// mode a host name is resolved and refused at every connection when it points at a non-public address.
import ipaddr from 'ipaddr.js';
import { createOutboundHttp, GatewayUnavailableError, OutboundFailure } from '../gateways/index.js';
import { createGuardedLookup, type Resolver } from '../webhooks/index.js';
import { blockedAddressReason, unbracketed } from '../webhooks/rules.js';
import { parseProviderError, type ProviderErrorBody, type UpstreamUrlPolicy } from './rules.js';
import { DEFAULT_UPSTREAM_DEADLINE_MS, type UpstreamDeadlines, type UpstreamOperation } from '../platform/config/index.js';

/** The provider answered with a catalog error (at any HTTP status): the provider's own answer, final for this call. */
export class ProviderRefusedError extends Error {
  override readonly name = 'ProviderRefusedError';
  constructor(
    readonly statusCode: number,
    readonly body: ProviderErrorBody,
  ) {
    super(`the provider refused: ${body.error_code}${body.code !== undefined ? ` (${body.code})` : ''}`);
  }
}

/** Which provider operation a call is, for its deadline (UPSTREAM_DEADLINES_MS) and its metrics. */
export function providerOperation(method: string, path: string): UpstreamOperation {
  if (method === 'GET') return 'lookup';
  if (method === 'DELETE' && path.startsWith('/v2/subscribe/billing_key/')) return 'destroy_billing_key';
  if (method === 'PUT' && path.startsWith('/v2/escrow/shipping/start/')) return 'shipping_start';
  const byPath: Readonly<Record<string, UpstreamOperation>> = {
    '/v2/request/subscribe': 'issue_billing_key',
    '/v2/subscribe/payment': 'charge',
    '/v2/cancel': 'cancel',
    '/v2/request/authentication': 'request_verification',
    '/v2/authenticate/realarm': 'resend_otp',
    '/v2/authenticate/confirm': 'confirm_otp',
  };
  // a call paygate does not make today gets the deadline of the operation that moves money: the strictest reading
  return byPath[path] ?? 'charge';
}

/** The whole-call deadline of one provider call. */
export function providerDeadlineMs(deadlines: UpstreamDeadlines, operation: UpstreamOperation): number {
  return deadlines.byOperation[operation] ?? deadlines.defaultMs;
}

export interface ProviderEndpoint {
  /** the provider's {base_url} or {message_url}, as stored (no trailing '/') */
  readonly baseUrl: string;
  readonly clientKey: string;
  readonly secretKey: string;
}

export interface ProviderRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** from the endpoint's root: '/v2/receipt/…' */
  readonly path: string;
  readonly body?: unknown;
  /** sent as Idempotency-Key; required on a POST, where a lost answer must not become a second execution */
  readonly idempotencyKey?: string;
  /** a shorter deadline than the operation's (a caller that must answer someone else in time) */
  readonly deadlineMs?: number;
}

export interface ProviderClient {
  /**
   * One request. Resolves with the parsed JSON of a 2xx answer. A catalog error in the answer, whatever its status,
   * is ProviderRefusedError; no answer (network, timeout), a 5xx without a catalog body, or an unparsable body is
   * GatewayUnavailableError (retryable under the same Idempotency-Key).
   */
  call(endpoint: ProviderEndpoint, req: ProviderRequest): Promise<unknown>;
  close(): Promise<void>;
}

export function createProviderClient(opts: {
  readonly policy: UpstreamUrlPolicy;
  /** each call's whole deadline; unset: DEFAULT_UPSTREAM_DEADLINE_MS for every operation */
  readonly deadlines?: UpstreamDeadlines;
  /** the DNS lookup of the production-mode address check (tests inject one) */
  readonly resolve?: Resolver;
}): ProviderClient {
  const deadlines: UpstreamDeadlines = opts.deadlines ?? { defaultMs: DEFAULT_UPSTREAM_DEADLINE_MS, byOperation: {} };
  // the Agent's own bounds are only a backstop: the deadline below is what ends a call
  const longest = Math.max(deadlines.defaultMs, ...Object.values(deadlines.byOperation));
  const http = createOutboundHttp({
    timeoutMs: longest,
    connections: 32,
    // sandbox mode talks to a provider on this machine; production only to public addresses
    ...(opts.policy.sandbox ? {} : { lookup: createGuardedLookup({ sandbox: false }, opts.resolve) as never }),
  });

  const unavailable = (what: string, cause?: unknown) =>
    new GatewayUnavailableError(`upstream provider: ${what}`, cause === undefined ? undefined : { cause });

  return {
    async call(endpoint, req) {
      const url = new URL(`${endpoint.baseUrl}${req.path}`);
      if (!opts.policy.sandbox) {
        const host = unbracketed(url.hostname);
        // an address literal never goes through the guarded lookup: check it here
        // (the address stays out of the message: it reaches the merchant's error and the health view)
        if (ipaddr.isValid(host) && blockedAddressReason(host, { sandbox: false }) !== undefined) {
          throw unavailable("refused before connecting: the provider's address is not a public one");
        }
      }
      const credentials = Buffer.from(`${endpoint.clientKey}:${endpoint.secretKey}`, 'utf8').toString('base64');
      const operation = providerOperation(req.method, req.path);
      const deadlineMs = Math.min(providerDeadlineMs(deadlines, operation), req.deadlineMs ?? Number.POSITIVE_INFINITY);
      let statusCode: number;
      let text: string;
      try {
        ({ statusCode, text } = await http.send({
          url,
          method: req.method,
          headers: { authorization: `Basic ${credentials}`, 'user-agent': 'paygate-upstream/1' },
          ...(req.body !== undefined ? { body: req.body } : {}),
          ...(req.idempotencyKey !== undefined ? { idempotencyKey: req.idempotencyKey } : {}),
          deadlineMs,
        }));
      } catch (err) {
        if (err instanceof OutboundFailure && err.kind === 'deadline') {
          throw new GatewayUnavailableError(`upstream provider: no complete answer to the ${operation} within ${deadlineMs} ms`, {
            cause: err,
            deadlineMissed: true,
          });
        }
        throw unavailable(err instanceof OutboundFailure ? err.description : 'network error', err);
      }

      let parsed: unknown;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch (err) {
        throw unavailable(`unparsable answer (HTTP ${statusCode})`, err);
      }
      if (statusCode >= 200 && statusCode < 300) {
        if (parsed === undefined) throw unavailable(`empty answer (HTTP ${statusCode})`);
        return parsed;
      }
      const refusal = parseProviderError(parsed);
      if (refusal !== undefined) throw new ProviderRefusedError(statusCode, refusal);
      throw unavailable(`HTTP ${statusCode} without a catalog error`);
    },
    close: () => http.close(),
  };
}
