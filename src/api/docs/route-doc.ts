// The documentation of one route, keyed by 'METHOD /path' as the router prints it. Kept apart from the
// route files so documenting a route never changes how it validates or serializes.
import { z } from 'zod';
import type { ErrorName } from '../../platform/errors.js';
import { resourceId } from './schemas.js';

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

export interface RouteDoc {
  /** camelCase, unique across the document; the typed client's operation names */
  readonly operationId: string;
  readonly tag: DocTag;
  /** when the route file gives none */
  readonly summary?: string;
  readonly params?: z.ZodObject;
  /** the validator's own documentation (describeFields in src/platform/validation.ts), never written apart */
  readonly querystring?: z.ZodObject;
  /** likewise: derived from the checks of the body, or the plain zod schema the route validates with */
  readonly body?: z.ZodType;
  readonly response: {
    readonly status: number;
    readonly description: string;
    readonly schema: z.ZodType;
    /** application/json unless given */
    readonly contentType?: string;
  };
  /** one complete example: what a client sends (for routes with a body) and what it gets back */
  readonly example: { readonly request?: unknown; readonly response: unknown };
  /** the catalog errors this route itself can answer (the authentication ones are added by the route's auth) */
  readonly errors: readonly ErrorName[];
}

export type RouteDocs = Readonly<Record<string, RouteDoc>>;

/** The Idempotency-Key refusals every POST under the key can answer. */
export const IDEMPOTENCY_ERRORS = ['IDEMPOTENCY_IN_PROGRESS', 'IDEMPOTENCY_KEY_REUSED'] as const;

export const byId = (name: string) => z.object({ [name]: resourceId });

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
