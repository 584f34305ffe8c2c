// The migration list, applied in this order. Append new migrations at the end (one line each);
// the database's table map `Tables` is derived from this list.
import type { Migration } from '../migrate.js';
import { migration as platform } from './0001_platform.js';
import { migration as billing } from './0002_billing.js';
import { migration as verifications } from './0003_verifications.js';
import { migration as keyRotation } from './0004_key_rotation.js';
import { migration as webhooks } from './0005_webhooks.js';
import { migration as messages } from './0006_messages.js';
import { migration as escrow } from './0007_escrow.js';
import { migration as reserves } from './0008_reserves.js';
import { migration as schedules } from './0009_schedules.js';
import { migration as reconcile } from './0011_reconcile.js';
import { migration as chargeIdempotencyKey } from './0012_charge_idempotency_key.js';
import { migration as confirmIdempotencyKey } from './0013_confirm_idempotency_key.js';
import { migration as upstreams } from './0014_upstreams.js';
import { migration as viaUpstream } from './0015_via_upstream.js';
import { migration as dashboardSessions } from './0016_dashboard_sessions.js';
import { migration as verificationSends } from './0017_verification_sends.js';
import { migration as deliveryDispatch } from './0018_delivery_dispatch.js';
import { migration as providerIds } from './0019_provider_ids.js';
import { migration as receiptAttention } from './0021_receipt_attention.js';
import { migration as idempotencyLease } from './0022_idempotency_lease.js';

export const migrations = [
  platform,
  billing,
  verifications,
  keyRotation,
  webhooks,
  messages,
  escrow,
  reserves,
  schedules,
  reconcile,
  chargeIdempotencyKey,
  confirmIdempotencyKey,
  upstreams,
  viaUpstream,
  dashboardSessions,
  verificationSends,
  deliveryDispatch,
  providerIds,
  receiptAttention,
  idempotencyLease,
] as const;

type UnionToIntersection<U> = (U extends unknown ? (k: U) => void : never) extends (k: infer I) => void ? I : never;
type TablesOf<M> = M extends Migration<infer T> ? T : never;

/** The Kysely table-type map: the intersection of every migration's tables. */
export type Tables = UnionToIntersection<TablesOf<(typeof migrations)[number]>>;
