// Validation at the edge: a zod schema's issues become one catalog error, chosen per field so the
// spec's codes (blank vs invalid) come out in the order the spec checks fields. Pure code.
import type { z } from 'zod';
import { ApiError, type ErrorName } from './errors.js';

/**
 * Per-field error names for validation failures. `blank` when the field is missing, null or an
 * empty/whitespace string; `invalid` for any other failure (falls back to `blank`).
 * Fields are checked in the map's order, so list them in the order the spec checks them.
 */
export type FieldErrors = Readonly<Record<string, { readonly blank: ErrorName; readonly invalid?: ErrorName }>>;

export interface IssueLike {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

function isBlank(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

function describeIssue(issue: IssueLike): string {
  const path = issue.path.map(String).join('.');
  return path ? `${path}: ${issue.message}` : issue.message;
}

/** Turns validation issues into one catalog error (the first mapped field wins). */
export function issuesToApiError(issues: readonly IssueLike[], input: unknown, fieldErrors: FieldErrors = {}): ApiError {
  const record = typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as Record<string, unknown>) : undefined;
  if (record === undefined) {
    return new ApiError('INVALID_REQUEST', { payloadMessage: 'the request body must be a JSON object' });
  }
  for (const [field, names] of Object.entries(fieldErrors)) {
    const issue = issues.find((i) => i.path[0] === field);
    if (!issue) continue;
    const name = isBlank(record[field]) ? names.blank : (names.invalid ?? names.blank);
    return new ApiError(name, { payloadMessage: describeIssue(issue) });
  }
  const first = issues[0];
  return new ApiError('INVALID_REQUEST', first ? { payloadMessage: describeIssue(first) } : {});
}

/**
 * Validates `input` with a zod schema; on failure throws the catalog error chosen by `fieldErrors`
 * (or INVALID_REQUEST). Use in handlers: `const body = validate(schema, request.body, { card_no:
 * { blank: 'SUBSCRIBE_CARD_NO_BLANK' } })`.
 */
export function validate<S extends z.ZodType>(schema: S, input: unknown, fieldErrors: FieldErrors = {}): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw issuesToApiError(result.error.issues, input, fieldErrors);
}

