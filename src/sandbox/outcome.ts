/** What a sandbox PG operation answers: data on success, or the PG's own refusal code and text. */
export type PgOutcome<T> =
  | { readonly ok: true; readonly data: T }
  | { readonly ok: false; readonly code: string; readonly message: string };

export const approved = <T>(data: T): PgOutcome<T> => ({ ok: true, data });
export const refused = (code: string, message: string): PgOutcome<never> => ({ ok: false, code, message });
