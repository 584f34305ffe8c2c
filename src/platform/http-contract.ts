// The HTTP contract of a route: what it takes, what it answers, which catalog errors it can give, one example
// and its words for the reference. Each area writes its routes' contracts in its own `http.ts`, beside the rules
// that validate the requests; the route (src/api/routes), the OpenAPI document (src/api/docs), the typed client
// (generated from that document) and the suite's check of every answer (test/helpers/app.ts) all read them there.
// Contracts are zod schemas and plain data: no Fastify, no I/O.
import { z } from 'zod';
import type { ErrorName } from './errors.js';
import { resourceIdDoc, timestampDoc, wonDoc } from './validation.js';

export type DocTag =
  | 'auth'
  | 'billing'
  | 'reserves'
  | 'schedules'
  | 'verification'
  | 'escrow'
  | 'message webhooks'
  | 'sandbox'
  | 'admin'
  | 'system';

export interface RouteContract {
  /** camelCase, unique across the document; the typed client's operation names */
  readonly operationId: string;
  readonly tag: DocTag;
  /** one line: the reference's title of the operation */
  readonly summary: string;
  /** what the route does, the order of its checks, what a client does after each failure */
  readonly description?: string;
  readonly params?: z.ZodObject;
  /** the validator's own documentation (describeFields in src/platform/validation.ts), never written apart */
  readonly querystring?: z.ZodObject;
  /** likewise: derived from the checks of the body, or the plain zod schema the route validates with */
  readonly body?: z.ZodType;
  /** the success answer; every answer the suite sees is checked against it (errors against ApiErrorBody) */
  readonly response: {
    readonly status: number;
    readonly description: string;
    readonly schema: z.ZodType;
    /** application/json unless given */
    readonly contentType?: string;
  };
  /**
   * Where the route's error answers add fields to the catalog envelope (ApiErrorBody), at one status: what they carry
   * (e.g. the health check's 503 names the components not ready). Every other error answer is the envelope alone.
   */
  readonly errorAnswer?: { readonly status: number; readonly schema: z.ZodType };
  /** one complete example: what a client sends (for routes with a body) and what it gets back */
  readonly example: { readonly request?: unknown; readonly response: unknown };
  /** the catalog errors this route itself can answer (the authentication ones are added by the route's auth) */
  readonly errors: readonly ErrorName[];
}

/** An area's routes, keyed by 'METHOD /path' as the router prints it (Fastify's `:param` syntax). */
export type RouteContracts = Readonly<Record<string, RouteContract>>;

/** The Idempotency-Key refusals every POST under the key can answer. */
export const IDEMPOTENCY_ERRORS = ['IDEMPOTENCY_IN_PROGRESS', 'IDEMPOTENCY_KEY_REUSED'] as const;

/** Shared components of the document: each schema added here becomes #/components/schemas/<id>. */
export const docRegistry = z.registry<{ id?: string; description?: string }>();

/** Names a schema as a component of the document, so every route answering it references one definition. */
export function component<T extends z.ZodType>(id: string, schema: T): T {
  docRegistry.add(schema, { id });
  return schema;
}

/** Every timestamp the API writes: ISO 8601 with the Asia/Seoul offset, seconds precision. */
export const timestamp = timestampDoc;
export const resourceId = resourceIdDoc;
/** Every amount the API writes: whole won, within the bounds it takes amounts in (wonDoc in ./validation.ts). */
export const won = wonDoc(0).describe('won (KRW), a whole number');
/** The merchant's own data on a payment, a verification, a reserve or a schedule. */
export const metadata = z.record(z.string(), z.unknown()).describe('merchant data, returned as given (at most 8 KB)');

export const byId = (name: string) => z.object({ [name]: resourceId });

/** The paging fields of every list answer. */
export const page = { page: z.number().int(), per: z.number().int(), count: z.number().int() };

/** The catalog envelope every error answer carries, whatever the route. */
export const ApiErrorBody = component(
  'ApiError',
  z.object({
    error_code: z.string().describe('the catalog name, e.g. RC_NOT_FOUND'),
    code: z.number().int().describe('the catalog number, e.g. 2000'),
    message: z.string(),
    pg_error_code: z.string().optional().describe("the PG's own code, when the PG refused"),
    payload: z.object({ message: z.string() }).optional().describe('which field or rule failed'),
    receipt_id: z
      .string()
      .optional()
      .describe(
        'the receipt a charge or cancel left for paygate to settle (its PG answer was lost, 9502): poll GET /v2/receipt/{receipt_id}',
      ),
  }),
);

/** Example identifiers: fixed, so the document (and the generated client) is the same on every build. */
export const EX = {
  applicationId: '6747e3a1c0ffee0000000001',
  receiptId: '6747e3a1c0ffee0000000002',
  billingKey: '6747e3a1c0ffee0000000003',
  billingReceiptId: '6747e3a1c0ffee0000000004',
  reserveId: '6747e3a1c0ffee0000000005',
  scheduleId: '6747e3a1c0ffee0000000006',
  verificationId: '6747e3a1c0ffee0000000007',
  deliveryId: '6747e3a1c0ffee0000000008',
  escrowReceiptId: '6747e3a1c0ffee0000000009',
  messageId: '6747e3a1c0ffee000000000a',
  now: '2026-11-25T09:00:00+09:00',
  later: '2026-11-27T09:00:00+09:00',
} as const;
