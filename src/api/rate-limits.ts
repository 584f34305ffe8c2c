// Brute-force throttles on @fastify/rate-limit's counters. Failed authentications count per source IP
// and per credential (the client key, or the application_id of a token request); once a counter has
// used up its window's allowance, every request it covers gets 9429 TOO_MANY_REQUESTS with
// Retry-After, the right credentials included, until the window ends. Successful calls never count,
// so a merchant's normal traffic is not limited. Counters live in process memory (per API process).
import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../platform/errors.js';

/** Config-free constants (README, "Rate limits"). Windows are fixed: they start with the first failure. */
export const RATE_LIMITS = {
  /** wrong secret key (1204), unknown client key (1216), unknown or expired Bearer token (9403) */
  authFailures: { perIp: 30, perCredential: 20, windowMs: 60_000 },
  /** POST /v2/request/token refused for a wrong private key (1204) or unknown application (1216) */
  tokenFailures: { perIp: 30, perCredential: 20, windowMs: 60_000 },
  /** every POST /v2/request/token, answered or not (a token lives 30 minutes) */
  tokenRequests: { perIp: 60, windowMs: 60_000 },
  /** admin API calls presenting a wrong admin token; per IP only (there is one admin credential) */
  adminFailures: { perIp: 10, windowMs: 60_000 },
  /**
   * every POST /upstream/v1/notifications/{application_id}: each one costs paygate a call to the project's provider.
   * Counted per source IP and project: a provider sends all its projects' notifications from a few addresses, in
   * bursts (every escrow change, refund and lost charge), and one that meets 9429 too often disables the endpoint
   * (Standard Webhooks), losing what it had to tell
   */
  upstreamNotifications: { perIpAndProject: 1_200, windowMs: 60_000 },
} as const;

export interface FailureThrottle {
  /** TOO_MANY_REQUESTS (with Retry-After) when the IP, or the credential if given, has no failures left */
  check(request: FastifyRequest, reply: FastifyReply, credential?: string): Promise<void>;
  /** counts one failure against the IP and the credential */
  fail(request: FastifyRequest, credential?: string): Promise<void>;
}

export interface Throttles {
  readonly auth: FailureThrottle;
  readonly token: FailureThrottle;
  readonly admin: FailureThrottle;
}

declare module 'fastify' {
  interface FastifyInstance {
    readonly throttles: Throttles;
  }
}

const tooManyRequests = (retryAfterSeconds: number) =>
  new ApiError('TOO_MANY_REQUESTS', { payloadMessage: `retry in ${retryAfterSeconds} s` });

function failureThrottle(
  app: FastifyInstance,
  limits: { readonly perIp: number; readonly perCredential?: number; readonly windowMs: number },
): FailureThrottle {
  // the credential of the request being counted; digested so a long guessed key costs no memory
  const credentials = new WeakMap<FastifyRequest, string>();
  const byIp = app.createRateLimit({ max: limits.perIp, timeWindow: limits.windowMs });
  const byCredential =
    limits.perCredential === undefined
      ? undefined
      : app.createRateLimit({
          max: limits.perCredential,
          timeWindow: limits.windowMs,
          keyGenerator: (request) => credentials.get(request) ?? '',
        });
  const limitersFor = (request: FastifyRequest, credential: string | undefined) => {
    if (credential === undefined || !byCredential) return [byIp];
    credentials.set(request, createHash('sha256').update(credential).digest('base64url'));
    return [byIp, byCredential];
  };
  return {
    async check(request, reply, credential) {
      for (const limiter of limitersFor(request, credential)) {
        const state = await limiter(request, { increment: false });
        if (!state.isAllowed && state.remaining === 0 && state.ttl > 0) {
          const seconds = Math.max(1, state.ttlInSeconds);
          void reply.header('retry-after', String(seconds));
          throw tooManyRequests(seconds);
        }
      }
    },
    async fail(request, credential) {
      for (const limiter of limitersFor(request, credential)) await limiter(request);
    },
  };
}

/** Registers @fastify/rate-limit (per-route limits only, answered with the catalog envelope) and the throttles. */
export async function registerRateLimits(app: FastifyInstance): Promise<void> {
  await app.register(rateLimit, {
    global: false,
    // the plugin sets Retry-After before it throws this; the error handler renders the envelope
    errorResponseBuilder: (_request, context) => tooManyRequests(Math.max(1, Math.ceil(context.ttl / 1000))),
  });
  app.decorate('throttles', {
    auth: failureThrottle(app, RATE_LIMITS.authFailures),
    token: failureThrottle(app, RATE_LIMITS.tokenFailures),
    admin: failureThrottle(app, RATE_LIMITS.adminFailures),
  } satisfies Throttles);
}
