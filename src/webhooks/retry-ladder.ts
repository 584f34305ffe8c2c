// The webhook retry ladder (Svix's): the wait before attempt n is RETRY_LADDER_MS[n - 1], 10 h from the 7th on.
// A module of its own with no imports: the delivery workflow uses it, and every module a workflow imports is
// evaluated again for each workflow run in the worker's sandbox (and kept in memory with each cached run).

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
export const RETRY_LADDER_MS: readonly number[] = [0, 5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR];
export const JITTER = 0.2;

/** The rung before attempt `attempt` (1-based), without jitter. */
export function ladderDelayMs(attempt: number): number {
  if (attempt <= 1) return 0;
  return RETRY_LADDER_MS[Math.min(attempt - 1, RETRY_LADDER_MS.length - 1)]!;
}

/**
 * The wait before attempt `attempt`: the rung with ±20 % jitter (`random` in [0, 1), the workflow's
 * replay-safe Math.random), or the receiver's Retry-After, capped at twice the rung.
 */
export function retryDelayMs(attempt: number, random: number, retryAfterMs?: number): number {
  const rung = ladderDelayMs(attempt);
  if (retryAfterMs !== undefined) return Math.min(Math.max(retryAfterMs, 0), 2 * rung);
  return Math.round(rung * (1 - JITTER + 2 * JITTER * random));
}
