// Validation at the edge: a zod schema's issues become one catalog error. A check that is itself a spec
// rule says which catalog error it is (`fails(...)`); otherwise the error is chosen per field so the
// spec's codes (blank vs invalid) come out in the order the spec checks fields. Pure code.
import { z } from 'zod';
import { ApiError, type ErrorName, isErrorName } from './errors.js';

/**
 * Per-field error names for validation failures. `blank` when the field is missing, null or an
 * empty/whitespace string; `invalid` for any other failure (falls back to `blank`).
 * Fields are checked in the map's order, so list them in the order the spec checks them.
 */
export type FieldErrors = Readonly<Record<string, { readonly blank: ErrorName; readonly invalid?: ErrorName }>>;

export interface IssueLike {
  readonly path: readonly PropertyKey[];
  readonly message: string;
  /** a custom issue's params; `fails()` puts the catalog error there */
  readonly params?: Readonly<Record<string, unknown>> | undefined;
}

/** The catalog error a failed check stands for, with the exact texts the client sees. */
export interface CatalogFailure {
  readonly error: ErrorName;
  /** replaces the catalog message; never card data */
  readonly message?: string;
  readonly payloadMessage?: string;
}

/**
 * Params of a zod refinement that is one spec rule: `.refine(ok, fails('RC_NAME_BLANK'))`. The issue
 * carries the catalog error to `validate`, and the schema it belongs to stops there (abort), so a
 * later check of the same field never runs and a later stage (`.pipe`) never starts.
 */
export function fails(error: ErrorName, texts: Omit<CatalogFailure, 'error'> = {}) {
  const failure: CatalogFailure = { error, ...texts };
  return { params: { catalog: failure }, abort: true };
}

function catalogFailure(issue: IssueLike): CatalogFailure | undefined {
  const failure = issue.params?.catalog as Partial<CatalogFailure> | undefined;
  return typeof failure?.error === 'string' && isErrorName(failure.error) ? (failure as CatalogFailure) : undefined;
}

export function isBlank(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

/**
 * Characters an identifier must not contain: C0/C1 controls (and DEL), lone surrogates, line and
 * paragraph separators, and the invisible marks that reorder or hide text (U+061C, U+200B-U+200F,
 * U+202A-U+202E, U+2060-U+2064, U+2066-U+2069, U+FEFF). A U+202E in an order_id shows one id on a
 * dashboard and stores another.
 */
const UNSAFE_ID_CHARACTERS = /[\p{Cc}\p{Cs}\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/u;

/** Whether a merchant-chosen id is free of control and bidirectional formatting characters. */
export function isPlainId(value: string): boolean {
  return !UNSAFE_ID_CHARACTERS.test(value);
}

/** The failure of a merchant id with such characters: 9400, the field named in payload.message. */
export function notPlainId(field: string) {
  return fails('INVALID_REQUEST', {
    payloadMessage: `${field} must not contain control or bidirectional formatting characters.`,
  });
}

/** A JSON object (not an array): the only value with fields. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * One stage of a request body's checks: a loose object whose every listed field sees `body[field]`
 * (undefined when absent, so each field reports its own blank error), where an array or a scalar is
 * a body without fields, and every other key is passed on to a later stage (`stage1.pipe(stage2)`).
 * Issues come out in the shape's key order, so list the fields in the order the spec checks them.
 */
export function fields<S extends z.core.$ZodLooseShape>(shape: S) {
  return z.preprocess((input) => {
    const body = isRecord(input) ? input : {};
    return { ...body, ...Object.fromEntries(Object.keys(shape).map((key) => [key, body[key]])) };
  }, z.looseObject(shape));
}

function describeIssue(issue: IssueLike): string {
  const path = issue.path.map(String).join('.');
  return path ? `${path}: ${issue.message}` : issue.message;
}

/**
 * Turns validation issues into one catalog error: the first issue raised with `fails()` is that error;
 * otherwise the first mapped field wins.
 */
export function issuesToApiError(issues: readonly IssueLike[], input: unknown, fieldErrors: FieldErrors = {}): ApiError {
  for (const issue of issues) {
    const failure = catalogFailure(issue);
    if (failure) return new ApiError(failure.error, { message: failure.message, payloadMessage: failure.payloadMessage });
  }
  const record = isRecord(input) ? input : undefined;
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
 * Validates `input` with a zod schema; on failure throws the catalog error of the first `fails()` issue,
 * or the one chosen by `fieldErrors` (or INVALID_REQUEST). Use in handlers: `const body = validate(schema,
 * request.body, { card_no: { blank: 'SUBSCRIBE_CARD_NO_BLANK' } })`.
 */
export function validate<S extends z.ZodType>(schema: S, input: unknown, fieldErrors: FieldErrors = {}): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw issuesToApiError(result.error.issues, input, fieldErrors);
}
