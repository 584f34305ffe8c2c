// Idempotency-Key with Stripe's semantics for any POST route of an authenticated project:
// same key + same request within 24 h -> the first response replayed (Idempotent-Replayed: true);
// same key + different request -> 422 IDEMPOTENCY_KEY_REUSED; while the first is running -> 409
// IDEMPOTENCY_IN_PROGRESS. A 5xx answer frees the key so a retry runs again (the gateway call
// underneath carries its own derived key, so that retry cannot charge twice). So does a 409 that says
// something else is in progress (9409: another request, a cancel lease, a reconcile): that is not the
// request's answer, and a retry once it finished gets the real one. So does 9479 (a verification send cap): the
// request changed nothing, and a retry after its Retry-After runs. A running request renews its key's lease every
// IN_FLIGHT_RENEW_MS; a request whose process dies holds its key IN_FLIGHT_LEASE_MS more at most.
//
// Usage on a route: `{ preHandler: idempotency.preHandler, onSend: idempotency.onSend }`.
// Only the response is stored, never the request (which may hold card data); the request is kept
// as an HMAC (a keyring subkey; the key id is stored beside it) of a random salt, method, path and
// canonical body, so the database alone cannot be used to guess a card number back from it. The
// response is stored sealed (AES-GCM, bound to the project and key): a confirmed verification's
// response holds the person's name, phone, CI and DI.
import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, errorCatalog } from '../platform/errors.js';
import { createFieldCipher } from '../platform/security/field-cipher.js';
import type { Keyring } from '../platform/security/keyring.js';
import type { IdempotencyKeyProof } from '../platform/idempotency.js';
import { IN_FLIGHT_RENEW_MS, type IdempotencyStore } from '../platform/idempotency.js';

const IDEMPOTENCY_HEADER = 'idempotency-key';
const REPLAYED_HEADER = 'idempotent-replayed';
const RETENTION_MS = 24 * 60 * 60 * 1000;
/**
 * Temporary answers that are not the request's own and change nothing, by HTTP status: "something is in progress"
 * (errorCatalog.IDEMPOTENCY_IN_PROGRESS) and a verification send cap (VERIFICATION_SEND_LIMIT, with Retry-After).
 */
const TEMPORARY = [errorCatalog.IDEMPOTENCY_IN_PROGRESS, errorCatalog.VERIFICATION_SEND_LIMIT];
const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/;
/** Expired records are swept at most this often, by whichever request comes along. */
const PURGE_INTERVAL_MS = 60 * 60 * 1000;

interface Claim {
  readonly applicationId: string;
  readonly key: string;
}

/** A claim of this process's, with the timer that renews its lease while the request runs. */
interface HeldClaim extends Claim {
  readonly renewal: NodeJS.Timeout;
}

/** A request renews its lease at most this long (a handler that never answers must not keep a key forever). */
const MAX_RENEWAL_MS = 10 * 60_000;

/** JSON with object keys sorted at every depth, so key order does not change the fingerprint. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** `salt` is `<key id>.<random hex>`: the fingerprint is recomputed under the key that made it. */
function requestHash(keyring: Keyring, request: FastifyRequest, salt: string): string {
  const path = request.url.split('?')[0] ?? request.url;
  const dot = salt.indexOf('.');
  const keyId = dot > 0 ? salt.slice(0, dot) : keyring.currentKeyId;
  const text = `${salt}\u0000${request.method} ${path}\u0000${canonicalJson(request.body ?? null)}`;
  return keyring.mac('request-fingerprint', text, keyId).digest;
}

/** A 409 whose code says another operation is still in progress, or a 9479: temporary, never the request's answer. */
function isTemporary(status: number, payload: string): boolean {
  const entry = TEMPORARY.find((e) => e.status === status);
  if (!entry) return false;
  try {
    const body: unknown = JSON.parse(payload);
    return typeof body === 'object' && body !== null && (body as { code?: unknown }).code === entry.code;
  } catch {
    return false;
  }
}

export interface IdempotencyHooks {
  preHandler(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  onSend(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown>;
  /**
   * The key of a request that claimed one, as a MAC a charge stores: a retry under the same key whose first
   * request died after charging (its answer never stored) is answered the receipt rather than 9410.
   */
  keyProof(request: FastifyRequest): IdempotencyKeyProof | undefined;
}

export function createIdempotencyHooks(deps: {
  readonly idempotency: IdempotencyStore;
  /** the wall clock (Clocks.wallClock): a key's 24 h and its in-flight lease are real time, whatever the sandbox clock says */
  readonly clock: () => Date;
  readonly keyring: Keyring;
}): IdempotencyHooks {
  const claims = new WeakMap<FastifyRequest, HeldClaim>();
  /** Keeps the claim's lease alive while its request runs; a failed renewal is retried at the next tick. */
  const renewing = (claim: Claim): NodeJS.Timeout => {
    const startedAt = Date.now();
    const timer: NodeJS.Timeout = setInterval(() => {
      if (Date.now() - startedAt > MAX_RENEWAL_MS) {
        clearInterval(timer);
        return;
      }
      store.renew(claim.applicationId, claim.key, deps.clock()).catch(() => undefined);
    }, IN_FLIGHT_RENEW_MS);
    timer.unref();
    return timer;
  };
  const store = deps.idempotency;
  const cipher = createFieldCipher(deps.keyring);
  const context = (claim: Claim) => `idempotency\u0000${claim.applicationId}\u0000${claim.key}`;
  // records written before responses were sealed hold the JSON itself
  const openBody = (claim: Claim, body: string) => (body.startsWith('v1.') ? cipher.open(body, context(claim)) : body);
  let lastPurge = 0;

  return {
    async preHandler(request, reply) {
      const header = request.headers[IDEMPOTENCY_HEADER];
      if (header === undefined) return;
      if (typeof header !== 'string' || !KEY_FORMAT.test(header)) {
        throw new ApiError('INVALID_REQUEST', { message: 'Idempotency-Key must be 1-255 printable ASCII characters.' });
      }
      // project authentication ran in onRequest, before this hook
      const applicationId = request.project.application_id;
      const now = deps.clock();
      if (now.getTime() - lastPurge >= PURGE_INTERVAL_MS) {
        lastPurge = now.getTime();
        await store.purgeExpired(now);
      }
      const salt = `${deps.keyring.currentKeyId}.${randomBytes(16).toString('hex')}`;
      const claim = await store.claim({
        applicationId,
        key: header,
        requestHash: requestHash(deps.keyring, request, salt),
        requestSalt: salt,
        now,
        expiresAt: new Date(now.getTime() + RETENTION_MS),
      });
      if (claim.kind === 'claimed') {
        const held = { applicationId, key: header };
        claims.set(request, { ...held, renewal: renewing(held) });
        return;
      }
      if (requestHash(deps.keyring, request, claim.requestSalt) !== claim.requestHash)
        throw new ApiError('IDEMPOTENCY_KEY_REUSED');
      if (claim.kind === 'in_flight') throw new ApiError('IDEMPOTENCY_IN_PROGRESS');
      await reply
        .code(claim.response.status)
        .header(REPLAYED_HEADER, 'true')
        .type('application/json; charset=utf-8')
        .send(openBody({ applicationId, key: header }, claim.response.body));
    },

    async onSend(request, reply, payload) {
      const claim = claims.get(request);
      if (claim === undefined) return payload;
      claims.delete(request);
      clearInterval(claim.renewal);
      if (reply.statusCode >= 500 || typeof payload !== 'string' || isTemporary(reply.statusCode, payload)) {
        await store.release(claim.applicationId, claim.key);
      } else {
        await store.complete(claim.applicationId, claim.key, {
          status: reply.statusCode,
          body: cipher.seal(payload, context(claim)),
        });
      }
      return payload;
    },

    keyProof(request) {
      const claim = claims.get(request);
      if (claim === undefined) return undefined;
      const text = `${claim.applicationId}\u0000${claim.key}`;
      const { keyId, digest } = deps.keyring.mac('idempotency-key', text);
      return {
        mac: `${keyId}.${digest}`,
        matches(stored) {
          const dot = stored.indexOf('.');
          if (dot <= 0) return false;
          try {
            return deps.keyring.mac('idempotency-key', text, stored.slice(0, dot)).digest === stored.slice(dot + 1);
          } catch {
            return false; // made under a key the keyring no longer holds
          }
        },
      };
    },
  };
}
