// Validation at the edge: a zod schema's issues become one catalog error. A check that is itself a spec
// rule says which catalog error it is (`fails(...)`); otherwise the error is chosen per field so the
// spec's codes (blank vs invalid) come out in the order the spec checks fields. Each field's first check
// also carries its documentation (`documented(...)`), from which `describeFields` derives the schema the
// OpenAPI document shows: a body's fields are written once, where they are checked. Pure code.
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
 * Characters an identifier must not contain: C0/C1 controls (and DEL), lone surrogates, line and paragraph separators,
 * every format character (the invisible marks that reorder or hide text: U+202E in an order_id shows one id on a
 * dashboard and stores another; U+00AD, U+200B, U+2060, U+FEFF...), every other default-ignorable code point (U+034F,
 * the Hangul fillers U+115F, U+1160, U+3164, U+FFA0, variation selectors), and the full-width forms of ASCII
 * (U+FF01-U+FF5E) and the ideographic space: each makes an id that looks like another one. Refused, not folded: a
 * merchant's id is stored and answered exactly as sent.
 */
const UNSAFE_ID_CHARACTERS = /[\p{Cc}\p{Cs}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\uff01-\uff5e\u3000]/u;

/** Whether a merchant-chosen id is free of control, invisible and full-width look-alike characters. */
export function isPlainId(value: string): boolean {
  return !UNSAFE_ID_CHARACTERS.test(value);
}

/** The failure of a merchant id with such characters: 9400, the field named in payload.message. */
export function notPlainId(field: string) {
  return fails('INVALID_REQUEST', {
    payloadMessage: `${field} must not contain control, invisible formatting or full-width characters.`,
  });
}

/**
 * A merchant-chosen identifier (order_id, cancel_id, subscription_id, authentication_id): `checks` see it in
 * Unicode NFC, and it comes out in NFC, so the composed and decomposed spellings of one id (`café` as U+00E9 or
 * as e + U+0301) are one key wherever it is stored, looked up or echoed. Then control and bidirectional
 * formatting characters are refused (notPlainId). Anything but a string goes to `checks` untouched.
 */
export function merchantId<T extends z.ZodType>(field: string, checks: T) {
  return z.preprocess(
    (value) => (typeof value === 'string' ? value.normalize('NFC') : value),
    checks.refine((value) => typeof value !== 'string' || isPlainId(value), notPlainId(field)),
  );
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

/**
 * A check whose catalog failure depends on the value (a name or a reason in the text): `texts(value)` answers
 * undefined when the value passes. For `.superRefine(failsWith(...))`; aborts like `fails()`.
 */
export function failsWith<T>(error: ErrorName, texts: (value: T) => Omit<CatalogFailure, 'error'> | undefined) {
  return (value: T, ctx: z.RefinementCtx<T>) => {
    const found = texts(value);
    if (found === undefined) return;
    const failure: CatalogFailure = { error, ...found };
    ctx.addIssue({ code: 'custom', message: found.message ?? error, params: { catalog: failure }, continue: false });
  };
}

// ---- documentation: each field once, where it is checked

/** The documentation of the checks that carry one, set by documented(). */
const fieldDocs = new WeakMap<z.ZodType, z.ZodType>();
/** Every documentation describeFields / describeOneOf derived. */
const derivedDocs = new WeakSet<z.ZodType>();

/** Whether `schema` is a documentation derived from checks (describeFields, describeOneOf), not written apart. */
export function isDerivedDoc(schema: z.ZodType): boolean {
  return derivedDocs.has(schema);
}

/**
 * A field's check with its documentation: the shape a client sends (type, limits, optional or not, a description),
 * as a zod schema that JSON Schema can express. Put it on the field's first check (a field checked in several
 * stages is documented once); `describeFields` gathers it. Returns the check itself, unchanged.
 */
export function documented<C extends z.ZodType>(doc: z.ZodType, check: C): C {
  fieldDocs.set(check, doc);
  return check;
}

/** The fields a stage reads: fields({...}) or z.object({...}), refined, transformed or piped into. */
function shapeOf(stage: z.ZodType): Readonly<Record<string, z.ZodType>> | undefined {
  if (stage instanceof z.ZodObject) return stage.shape as Record<string, z.ZodType>;
  if (stage instanceof z.ZodPipe) return shapeOf(stage.out as z.ZodType) ?? shapeOf(stage.in as z.ZodType);
  return undefined;
}

/**
 * The documentation of a body (or a query) checked by `stages`: an object of every field the stages read, in the
 * order they first read it, each with the documentation of its documented() check. Loose, since fields() ignores
 * the keys it does not read; `strict` for a body whose checks refuse them. A field read but documented nowhere,
 * or documented twice, throws: when the rules module loads, so such a module never runs.
 */
export function describeFields(stages: readonly z.ZodType[], options: { readonly strict?: boolean } = {}) {
  const order: string[] = [];
  const docs = new Map<string, z.ZodType>();
  for (const stage of stages) {
    const shape = shapeOf(stage);
    if (shape === undefined) throw new Error('describeFields: a stage without fields');
    for (const [field, check] of Object.entries(shape)) {
      if (!order.includes(field)) order.push(field);
      const doc = fieldDocs.get(check);
      if (doc === undefined) continue;
      if (docs.has(field)) throw new Error(`describeFields: ${field} is documented twice`);
      docs.set(field, doc);
    }
  }
  const undocumented = order.filter((field) => !docs.has(field));
  if (undocumented.length > 0) throw new Error(`describeFields: no documentation for ${undocumented.join(', ')}`);
  const shape = Object.fromEntries(order.map((field) => [field, docs.get(field)!]));
  const doc = options.strict ? z.strictObject(shape) : z.looseObject(shape);
  derivedDocs.add(doc);
  return doc;
}

/**
 * The documentation of a body that gives exactly one of the fields `stages` read, and nothing else: one strict
 * object per field, each with that field's documentation.
 */
export function describeOneOf(stages: readonly z.ZodType[]) {
  const options = Object.entries(describeFields(stages).shape).map(([field, doc]) => z.strictObject({ [field]: doc }));
  if (options.length < 2) throw new Error('describeOneOf: fewer than two fields');
  const doc = z.union(options as [z.ZodObject, z.ZodObject, ...z.ZodObject[]]);
  derivedDocs.add(doc);
  return doc;
}

/** The documentation of every time the API reads or writes: ISO 8601 with an offset. */
export const timestampDoc = z.iso.datetime({ offset: true }).describe('ISO 8601 with offset, e.g. 2026-11-25T08:58:23+09:00');

/**
 * The largest amount in won paygate takes anywhere: a charge's price, a reserve's, a schedule's, a sandbox payment's;
 * tax_free and cancels are at most the price, so at most this too.
 */
export const MAX_WON = 10_000_000_000;

/** Whether `value` is a whole amount in won from `min` to MAX_WON: the check of every amount field. */
export function isWon(value: unknown, min: 0 | 1): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= MAX_WON;
}

/**
 * The documentation of an amount field that isWon(value, min) checks: the same bounds, so the reference shows the
 * limit the API enforces (never the safe-integer range a bare integer schema documents).
 */
export function wonDoc(min: 0 | 1) {
  return z.number().int().min(min).max(MAX_WON);
}

/** The documentation of paygate's ids (receipts, billing keys, reserves, ...). */
export const resourceIdDoc = z
  .string()
  .regex(/^[0-9a-f]{24}$/)
  .describe('24 hexadecimal characters');

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
    // a rule of the request's shape: the request's mistake, even where the spec answers it 500 (an OTP not 6 digits)
    if (failure) {
      return new ApiError(failure.error, { message: failure.message, payloadMessage: failure.payloadMessage, refused: true });
    }
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
