// Transitional: the contract types now live in src/platform/http-contract.ts.
import type { RouteContract } from '../../platform/http-contract.js';

export { byId, type DocTag, EX, IDEMPOTENCY_ERRORS } from '../../platform/http-contract.js';
export type RouteDoc = Omit<RouteContract, 'summary'> & { readonly summary?: string };
export type RouteDocs = Readonly<Record<string, RouteDoc>>;
