// paygate's caps on verification messages across verifications: how many OTP sends (a request that sends an SMS or
// pass push, and a resend) one phone and one project may have over sliding windows of wall-clock time. The counting
// is in sends-store.ts; the defaults and the refusal are here. Pure code: no I/O.
import { ApiError } from '../platform/errors.js';

/** At most `max` sends in any `windowMs` (a sliding window). */
export interface SendLimit {
  readonly max: number;
  readonly windowMs: number;
}

export interface SendLimits {
  /** per phone number of one project (counted by a keyed hash of the number) */
  readonly perPhone: readonly SendLimit[];
  /** per project, every phone together */
  readonly perProject: readonly SendLimit[];
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * The defaults (docs/design/verification.md, "Send caps"). Per phone 6 in 10 minutes: one verification's whole
 * allowance (the request and its 5 resends, MAX_RESENDS in contract.ts), so the per-verification cap stays the one a
 * person meets; a script pumping SMS to one number (or filling someone's phone) is stopped at the 7th, and at the
 * 11th in a day. 1,000 an hour per project bounds what a leaked key or a sign-up form under attack can cost.
 */
export const DEFAULT_SEND_LIMITS: SendLimits = {
  perPhone: [
    { max: 6, windowMs: 10 * MINUTE },
    { max: 10, windowMs: 24 * HOUR },
  ],
  perProject: [{ max: 1_000, windowMs: HOUR }],
};

/** The window in words: '10 minutes', '24 hours', '1 hour', '90 seconds'. */
export function describeWindow(windowMs: number): string {
  const units: readonly [number, string][] = [
    [24 * HOUR, 'day'],
    [HOUR, 'hour'],
    [MINUTE, 'minute'],
    [1_000, 'second'],
  ];
  for (const [ms, name] of units) {
    // days only when hours would not read better (24 hours, not 1 day: the window operators configure as 24h)
    if (name === 'day' && windowMs % (24 * HOUR) === 0 && windowMs / HOUR <= 48) continue;
    if (windowMs % ms === 0) {
      const n = windowMs / ms;
      return `${n} ${name}${n === 1 ? '' : 's'}`;
    }
  }
  return `${Math.ceil(windowMs / 1_000)} seconds`;
}

/** Which limit refused a send, and when the oldest send it counts leaves its window. */
export interface SendLimitHit {
  readonly scope: 'phone' | 'project';
  readonly limit: SendLimit;
  readonly retryAfterMs: number;
}

/** 9479 naming the limit (per phone or per project, the number, the window), with Retry-After in whole seconds. */
export function sendLimitError(hit: SendLimitHit): ApiError {
  const retryAfterSeconds = Math.max(1, Math.ceil(hit.retryAfterMs / 1_000));
  const who = hit.scope === 'phone' ? 'per phone number' : 'per project';
  return new ApiError('VERIFICATION_SEND_LIMIT', {
    message:
      `The verification message limit ${who} was reached: at most ${hit.limit.max} in ${describeWindow(hit.limit.windowMs)}. ` +
      `Retry after ${retryAfterSeconds} s.`,
    retryAfterSeconds,
  });
}

/** How long a send must be kept for every limit to count it: the longest window. */
export function retentionOf(limits: SendLimits): number {
  return Math.max(0, ...limits.perPhone.map((l) => l.windowMs), ...limits.perProject.map((l) => l.windowMs));
}
