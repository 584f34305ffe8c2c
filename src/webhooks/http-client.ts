// The SSRF-safe outbound client of webhooks. A destination is checked twice: when it is saved
// (checkDestination: the URL rules, then every address its host resolves to) and when a connection is
// opened (the undici Agent's `lookup` checks every address again, so a DNS answer that changed since —
// rebinding — cannot reach an internal address). IP literals never pass through `lookup`, so they are
// checked before the request. One POST: no redirects followed, 15 s for everything, at most the first
// 2 KB of the response body read (an endless body costs one attempt and a bounded buffer).
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';
import { Agent, request } from 'undici';
import {
  ATTEMPT_TIMEOUT_MS,
  blockedAddressReason,
  checkWebhookUrl,
  RESPONSE_EXCERPT_BYTES,
  unbracketed,
  type UrlPolicy,
} from './rules.js';

/** Every address a host name resolves to (tests inject one that answers what they need). */
export type Resolver = (hostname: string) => Promise<readonly LookupAddress[]>;

export const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

class BlockedAddressError extends Error {
  override readonly name = 'BlockedAddressError';
  readonly code = 'EBLOCKEDADDRESS';
}

/** Why none of the host's addresses may be used (the first refused one), or undefined when all are fine. */
export async function checkHostAddresses(
  hostname: string,
  policy: UrlPolicy,
  resolve: Resolver = systemResolver,
): Promise<string | undefined> {
  const host = unbracketed(hostname);
  if (ipaddr.isValid(host)) return blockedAddressReason(host, policy);
  let addresses: readonly LookupAddress[];
  try {
    addresses = await resolve(host);
  } catch {
    return `the host ${host} does not resolve`;
  }
  if (addresses.length === 0) return `the host ${host} does not resolve`;
  for (const { address } of addresses) {
    const reason = blockedAddressReason(address, policy);
    if (reason !== undefined) return `${host} resolves to a refused address: ${reason}`;
  }
  return undefined;
}

/** Save-time check of a webhook URL: the URL rules, then every resolved address. */
export async function checkDestination(
  raw: string,
  policy: UrlPolicy,
  resolve: Resolver = systemResolver,
): Promise<{ url: URL } | { reason: string }> {
  const checked = checkWebhookUrl(raw, policy);
  if ('reason' in checked) return checked;
  const refusal = await checkHostAddresses(checked.url.hostname, policy, resolve);
  return refusal === undefined ? checked : { reason: refusal };
}

export interface SendResult {
  readonly httpStatus: number | null;
  /** the first 2 KB of the body, as text */
  readonly responseBody: string | null;
  /** why no HTTP status came back, or why the status is a failure (a redirect) */
  readonly error: string | null;
  readonly retryAfter: string | undefined;
  readonly durationMs: number;
}

export interface WebhookHttpClient {
  /** One POST; never throws for anything the network or the receiver does. */
  post(url: string, headers: Record<string, string>, body: string): Promise<SendResult>;
  close(): Promise<void>;
}

export interface WebhookHttpOptions {
  readonly policy: UrlPolicy;
  readonly resolve?: Resolver;
  /** the whole exchange; 15 s unless a test shortens it */
  readonly timeoutMs?: number;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * An undici `connect.lookup` that resolves a host name and refuses to connect when any of its addresses is one the
 * policy blocks (checked at every connection, so a DNS answer changed since the save-time check cannot reach an
 * internal address). IP literals never pass through a lookup: callers check them before the request.
 */
export function createGuardedLookup(policy: UrlPolicy, resolve: Resolver = systemResolver) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (found) => {
        const family = options.family === 4 || options.family === 6 ? options.family : undefined;
        const addresses = family === undefined ? [...found] : found.filter((a) => a.family === family);
        if (addresses.length === 0) {
          callback(Object.assign(new Error(`the host ${hostname} does not resolve`), { code: 'ENOTFOUND' }), '');
          return;
        }
        for (const { address } of addresses) {
          const reason = blockedAddressReason(address, policy);
          if (reason !== undefined) {
            callback(new BlockedAddressError(`${hostname} resolves to a refused address: ${reason}`), '');
            return;
          }
        }
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

export function createWebhookHttpClient(opts: WebhookHttpOptions): WebhookHttpClient {
  const resolve = opts.resolve ?? systemResolver;
  const timeoutMs = opts.timeoutMs ?? ATTEMPT_TIMEOUT_MS;

  const guardedLookup = createGuardedLookup(opts.policy, resolve);

  const agent = new Agent({
    connect: { lookup: guardedLookup as never, timeout: timeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    keepAliveTimeout: 4_000,
  });

  return {
    async post(url, headers, body) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      const failed = (error: string): SendResult => ({
        httpStatus: null,
        responseBody: null,
        error,
        retryAfter: undefined,
        durationMs: elapsed(),
      });
      const host = unbracketed(new URL(url).hostname);
      if (ipaddr.isValid(host)) {
        const reason = blockedAddressReason(host, opts.policy);
        if (reason !== undefined) return failed(`refused before connecting: ${reason}`);
      }
      const signal = AbortSignal.timeout(timeoutMs);
      try {
        const res = await request(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'paygate-webhooks/1', ...headers },
          body,
          dispatcher: agent,
          signal,
        });
        const responseBody = await readExcerpt(res.body);
        const retryAfter = res.headers['retry-after'];
        const status = res.statusCode;
        return {
          httpStatus: status,
          responseBody,
          error: status >= 300 && status < 400 ? 'redirects are not followed' : null,
          retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
          durationMs: elapsed(),
        };
      } catch (err) {
        if (signal.aborted) return failed(`no complete answer within ${timeoutMs / 1000} s`);
        return failed(describeError(err));
      }
    },
    close: () => agent.close(),
  };
}

/** The first 2 KB of the body as text (NULs dropped: Postgres text cannot hold them); the rest is never read. */
async function readExcerpt(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= RESPONSE_EXCERPT_BYTES) break;
    }
  } catch {
    // a body cut short still gives what arrived
  } finally {
    body.destroy();
  }
  if (size === 0) return null;
  const text = new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES));
  return text.replaceAll('\u0000', '');
}

function describeError(err: unknown): string {
  if (err instanceof BlockedAddressError) return `refused at connect: ${err.message}`;
  const cause = err instanceof Error && err.cause instanceof BlockedAddressError ? err.cause : undefined;
  if (cause) return `refused at connect: ${cause.message}`;
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    return code ? `${code}: ${err.message}` : err.message;
  }
  return 'the request failed';
}
