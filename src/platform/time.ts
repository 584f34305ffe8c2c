// The one timestamp formatter of the API: ISO 8601 with the Korea Standard Time offset (+09:00),
// second precision, e.g. 2026-11-22T13:05:01+09:00 — the form the API family's clients parse.
// KST has no daylight saving, so a fixed offset is exact.

const KST_OFFSET_MS = 9 * 60 * 60 * 1000;

export function formatTimestamp(date: Date): string {
  const shifted = new Date(date.getTime() + KST_OFFSET_MS);
  return `${shifted.toISOString().slice(0, 19)}+09:00`;
}

/** formatTimestamp for optional values: undefined/null stay absent. */
export function formatOptionalTimestamp(date: Date | null | undefined): string | undefined {
  return date == null ? undefined : formatTimestamp(date);
}

export function addMinutes(date: Date, minutes: number): Date {
  return new Date(date.getTime() + minutes * 60_000);
}

/**
 * The two clocks of a process, built once by the composition root (src/composition, createClocks) and handed to
 * each use by name. docs/design/sandbox.md ("Which clock") lists every use and why it reads the one it reads.
 */
export interface Clocks {
  /**
   * Real-world time, the host's clock: what people and other systems keep. Access tokens and their expiry, project
   * keys and a rotation's grace, webhook secrets' overlap, the `webhook-timestamp` header and its signature, rate-limit
   * windows, Idempotency-Key retention, dashboard sessions. No sandbox clock ever moves it.
   */
  readonly wallClock: () => Date;
  /**
   * The durable processes' time: the sandbox clock in sandbox mode on the embedded engine (the engine's timers, and the
   * dates the processes stamp: receipts, reserve executions, schedule periods, verification windows, escrow dates);
   * the wall clock everywhere else.
   */
  readonly businessClock: () => Date;
}

/** The host's clock. */
export const wallClock = (): Date => new Date();
