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
