// Webhook endpoints: one per (project, kind), created with defaults on first save, their signing secrets sealed
// (bound to the endpoint and to which secret they are) and, after a rotation, the previous one kept for its overlap.
import { transactionally } from '../platform/db/transaction.js';
import { sql, type Kysely } from 'kysely';
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_MESSAGE_EVENTS, type WebhookConfigView } from './rules.js';
import type { FieldCipher } from '../platform/security/field-cipher.js';
import type { Tables } from '../platform/db/db.js';
import type { EndpointChange, EndpointKind, EndpointRow, SigningColumns, SigningSecrets } from './records.js';
import { stopPendingDeliveries } from './deliveries-store.js';

export interface EndpointStore {
  /** Whether the project exists (the admin API's delivery history answers 9426 for an unknown one). */
  projectExists(applicationId: string): Promise<boolean>;
  findEndpoint(applicationId: string, kind: EndpointKind): Promise<EndpointRow | undefined>;
  findEndpointById(endpointId: string): Promise<EndpointRow | undefined>;
  /**
   * Applies a PUT: creates the endpoint on first save with `newSecret` (also when it has none yet).
   * `enabled: true` clears the failure counter and auto_disabled_at. `disabled` is true when this
   * change switched an enabled endpoint off.
   */
  saveEndpoint(
    applicationId: string,
    kind: EndpointKind,
    change: EndpointChange,
    newSecret: string,
    endpointId: string,
  ): Promise<{ endpoint: EndpointRow; disabled: boolean; issuedSecret?: string }>;
  /** The new secret signs from now on; the current one keeps signing beside it until `previousUntil`. */
  rotateSecret(
    applicationId: string,
    kind: EndpointKind,
    newSecret: string,
    previousUntil: Date,
    endpointId: string,
  ): Promise<EndpointRow>;
  configView(endpoint: EndpointRow | undefined): WebhookConfigView;
  signingSecrets(endpoint: SigningColumns, now: Date): SigningSecrets | undefined;
  /** Every waiting delivery of the endpoint stops as failed (tests and manual retries excepted); their ids. */
  stopPending(endpointId: string): Promise<string[]>;
}

const secretContext = (endpointId: string, which: 'current' | 'previous') => `webhook-endpoint:${endpointId}:secret:${which}`;

/** The endpoint row locked for this transaction, created with defaults when missing. */
async function lockedEndpoint(
  trx: Kysely<Tables>,
  applicationId: string,
  kind: EndpointKind,
  endpointId: string,
): Promise<EndpointRow> {
  await trx
    .insertInto('webhook_endpoints')
    .values({
      endpoint_id: endpointId,
      application_id: applicationId,
      kind,
      url: null,
      // a project endpoint gets every payment event its producers send; events filter message events only
      events: JSON.stringify(kind === 'message' ? DEFAULT_MESSAGE_EVENTS : []),
      enabled: true,
      secret_sealed: null,
      previous_secret_sealed: null,
      previous_secret_expires_at: null,
      retry_count: DEFAULT_MAX_ATTEMPTS,
      auto_disabled_at: null,
      last_sent_at: null,
      last_status: null,
    })
    .onConflict((oc) => oc.columns(['application_id', 'kind']).doNothing())
    .execute();
  return trx
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('application_id', '=', applicationId)
    .where('kind', '=', kind)
    .forUpdate()
    .executeTakeFirstOrThrow();
}

export function createEndpointStore(db: Kysely<Tables>, cipher: FieldCipher): EndpointStore {
  const openSecret = (endpointId: string, which: 'current' | 'previous', sealed: string | null) =>
    sealed === null ? undefined : cipher.open(sealed, secretContext(endpointId, which));

  return {
    async projectExists(applicationId) {
      const row = await db
        .selectFrom('projects')
        .select('application_id')
        .where('application_id', '=', applicationId)
        .executeTakeFirst();
      return row !== undefined;
    },

    async findEndpoint(applicationId, kind) {
      return db
        .selectFrom('webhook_endpoints')
        .selectAll()
        .where('application_id', '=', applicationId)
        .where('kind', '=', kind)
        .executeTakeFirst();
    },

    async findEndpointById(endpointId) {
      return db.selectFrom('webhook_endpoints').selectAll().where('endpoint_id', '=', endpointId).executeTakeFirst();
    },

    async saveEndpoint(applicationId, kind, change, newSecret, endpointId) {
      return transactionally(db, async (trx) => {
        const current = await lockedEndpoint(trx, applicationId, kind, endpointId);
        const id = current.endpoint_id;
        const reEnable = change.enabled === true;
        const endpoint = await trx
          .updateTable('webhook_endpoints')
          .set({
            ...(change.url !== undefined ? { url: change.url } : {}),
            ...(change.events !== undefined
              ? { events: JSON.stringify(change.events.length > 0 ? change.events : DEFAULT_MESSAGE_EVENTS) }
              : {}),
            ...(change.enabled !== undefined ? { enabled: change.enabled } : {}),
            ...(reEnable ? { consecutive_failures: 0, auto_disabled_at: null } : {}),
            ...(change.retryCount !== undefined ? { retry_count: change.retryCount } : {}),
            ...(current.secret_sealed === null ? { secret_sealed: cipher.seal(newSecret, secretContext(id, 'current')) } : {}),
            updated_at: sql<Date>`now()`,
          })
          .where('endpoint_id', '=', id)
          .returningAll()
          .executeTakeFirstOrThrow();
        return {
          endpoint,
          disabled: current.enabled && !endpoint.enabled,
          ...(current.secret_sealed === null ? { issuedSecret: newSecret } : {}),
        };
      });
    },

    async rotateSecret(applicationId, kind, newSecret, previousUntil, endpointId) {
      return transactionally(db, async (trx) => {
        const current = await lockedEndpoint(trx, applicationId, kind, endpointId);
        const id = current.endpoint_id;
        const previous = openSecret(id, 'current', current.secret_sealed);
        return trx
          .updateTable('webhook_endpoints')
          .set({
            secret_sealed: cipher.seal(newSecret, secretContext(id, 'current')),
            previous_secret_sealed: previous === undefined ? null : cipher.seal(previous, secretContext(id, 'previous')),
            previous_secret_expires_at: previous === undefined ? null : previousUntil,
            updated_at: sql<Date>`now()`,
          })
          .where('endpoint_id', '=', id)
          .returningAll()
          .executeTakeFirstOrThrow();
      });
    },

    configView(endpoint) {
      return {
        url: endpoint?.url ?? null,
        events: endpoint?.events ?? [...DEFAULT_MESSAGE_EVENTS],
        enabled: endpoint?.enabled ?? true,
        secret: endpoint ? (openSecret(endpoint.endpoint_id, 'current', endpoint.secret_sealed) ?? null) : null,
        lastSentAt: endpoint?.last_sent_at ?? null,
        lastStatus: endpoint?.last_status ?? null,
        consecutiveFailures: endpoint?.consecutive_failures ?? 0,
        autoDisabledAt: endpoint?.auto_disabled_at ?? null,
        retryCount: endpoint?.retry_count ?? DEFAULT_MAX_ATTEMPTS,
      };
    },

    signingSecrets(endpoint, now) {
      const current = openSecret(endpoint.endpoint_id, 'current', endpoint.secret_sealed);
      if (current === undefined) return undefined;
      const stillSigning = endpoint.previous_secret_expires_at !== null && endpoint.previous_secret_expires_at > now;
      const previous = stillSigning ? openSecret(endpoint.endpoint_id, 'previous', endpoint.previous_secret_sealed) : undefined;
      return previous === undefined ? { current } : { current, previous };
    },

    stopPending(endpointId) {
      return stopPendingDeliveries(db, endpointId);
    },
  };
}
