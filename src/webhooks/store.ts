// Webhook endpoints, deliveries and attempts. Signing secrets and delivery bodies are sealed (bound to
// their row); an attempt is recorded once per (delivery, attempt number), together with the delivery's
// new state and the endpoint's health, in one transaction — so a retried attempt activity changes nothing twice.
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import {
  AUTO_DISABLE_AFTER_FAILURES,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MESSAGE_EVENTS,
  type AttemptView,
  type DeliveryContentType,
  type DeliveryDestination,
  type DeliveryState,
  type DeliveryView,
  stateAfterAttempt,
  type WebhookConfigChange,
  type WebhookConfigView,
} from './rules.js';
import type { FieldCipher } from '../platform/security/field-cipher.js';
import type { Tables } from '../platform/db/db.js';
import type {
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookEndpointsTable,
} from '../platform/db/migrations/0005_webhooks.js';
import type { DeliveryDestinationColumns } from '../platform/db/migrations/0006_messages.js';

export type EndpointRow = Selectable<WebhookEndpointsTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable & DeliveryDestinationColumns>;
export type AttemptRow = Selectable<WebhookAttemptsTable>;

/** 'message': the messaging sub-service's webhook; 'project': the project's webhook_url (payments, escrow) */
export type EndpointKind = 'message' | 'project';

/** A PUT's change, or the admin API's webhook_url (null clears the URL). */
export type EndpointChange = Omit<WebhookConfigChange, 'url'> & { readonly url?: string | null };

export interface NewDelivery {
  readonly deliveryId: string;
  readonly endpoint: EndpointRow;
  readonly event: string;
  readonly eventCode: number;
  readonly tags: readonly string[];
  /** the exact body sent on every attempt */
  readonly body: string;
  readonly sendsWhenDisabled: boolean;
  readonly createdAt: Date;
  /** a charge's feedback_url instead of the endpoint's URL: signed with the endpoint's secret, not counted in its health */
  readonly feedbackUrl?: string;
  /** application/json unless said otherwise */
  readonly contentType?: DeliveryContentType;
}

export interface SigningSecrets {
  readonly current: string;
  /** the secret before the last rotation, while it still signs */
  readonly previous?: string;
}

/** What an attempt produced, as the attempt activity hands it to the store. */
export interface AttemptResult {
  readonly attempt: number;
  readonly lastAttempt: number;
  readonly attemptedAt: Date;
  readonly durationMs: number;
  readonly httpStatus: number | null;
  readonly responseBody: string | null;
  readonly error: string | null;
  readonly retryAfterMs: number | null;
}

/** An endpoint's signing columns: what signingSecrets reads. */
export type SigningColumns = Pick<
  EndpointRow,
  'endpoint_id' | 'secret_sealed' | 'previous_secret_sealed' | 'previous_secret_expires_at'
>;

/** A delivery claimed for an attempt, with its endpoint's signing columns. */
export interface ClaimedDelivery {
  readonly delivery: DeliveryRow;
  readonly signing: SigningColumns;
}

export interface RecordedAttempt {
  readonly state: DeliveryState;
  readonly retryAfterMs: number | null;
  /** other deliveries of the endpoint this attempt stopped by disabling it */
  readonly stoppedDeliveryIds: readonly string[];
  /** this attempt disabled its endpoint (10 failures in a row, or a 410) */
  readonly endpointDisabled?: boolean;
}

export interface WebhookStore {
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

  createDelivery(d: NewDelivery): Promise<DeliveryRow>;
  /** A delivery whose workflow could not be started: it never existed. */
  deleteDelivery(deliveryId: string): Promise<void>;
  findDelivery(deliveryId: string): Promise<DeliveryRow | undefined>;
  /** The sealed body opened. */
  deliveryBody(row: DeliveryRow): string;
  /** Newest first; only those sent to `destination` (the endpoint's URL or a charge's feedback_url) when given. */
  listDeliveries(
    endpointId: string,
    page: number,
    per: number,
    destination?: DeliveryDestination,
  ): Promise<{ rows: DeliveryView[]; count: number }>;
  /** Failed deliveries created at or after `since`, oldest first, at most `limit`. */
  failedSince(endpointId: string, since: Date, limit: number): Promise<DeliveryRow[]>;
  /** failed -> ready for a manual retry (sent even while the endpoint is disabled); undefined when not failed. */
  reopenFailed(deliveryId: string): Promise<DeliveryRow | undefined>;
  /** Every waiting delivery of the endpoint stops as failed (tests and manual retries excepted); their ids. */
  stopPending(endpointId: string): Promise<string[]>;
  /**
   * Deliveries that may have no workflow: 'ready' with no attempt made, created before `createdBefore` (the
   * process that saved them may have died before starting their run), or 'doing' untouched since
   * `doingBefore` (their run ended without recording the attempt). Oldest first, at most `limit`.
   */
  possiblyOrphaned(createdBefore: Date, doingBefore: Date, limit: number): Promise<DeliveryRow[]>;

  findAttempt(deliveryId: string, attempt: number): Promise<AttemptRow | undefined>;
  /**
   * The common case of an attempt in one statement: ready/doing -> doing, when the attempt is not recorded
   * yet and the endpoint has a secret and may be sent to (enabled, or a feedback / regardless delivery).
   * Undefined otherwise: the caller looks at each condition (findDelivery, findAttempt, ...).
   */
  claimAttempt(deliveryId: string, attempt: number): Promise<ClaimedDelivery | undefined>;
  /** ready/doing -> doing before a send; false when the delivery is no longer waiting. */
  markDoing(deliveryId: string): Promise<boolean>;
  /** ready/doing -> failed without a send (the endpoint was disabled meanwhile). */
  markFailed(deliveryId: string): Promise<void>;
  /**
   * Records an attempt once: the attempt row, the delivery's state and retry_count, the endpoint's health
   * (counter, last send, auto-disable at 10 failures in a row or at once on 410). A second call for the
   * same attempt number records nothing and returns the state as it stands.
   */
  recordAttempt(deliveryId: string, result: AttemptResult): Promise<RecordedAttempt>;
}

const secretContext = (endpointId: string, which: 'current' | 'previous') => `webhook-endpoint:${endpointId}:secret:${which}`;
const bodyContext = (deliveryId: string) => `webhook-delivery:${deliveryId}:body`;

function attemptView(a: AttemptRow): AttemptView {
  return {
    attempt: a.attempt,
    attemptedAt: a.attempted_at,
    durationMs: a.duration_ms,
    httpStatus: a.http_status,
    responseBody: a.response_body,
    error: a.error,
  };
}

export function createWebhookStore(db: Kysely<Tables>, cipher: FieldCipher): WebhookStore {
  const openSecret = (endpointId: string, which: 'current' | 'previous', sealed: string | null) =>
    sealed === null ? undefined : cipher.open(sealed, secretContext(endpointId, which));

  /** The endpoint row locked for this transaction, created with defaults when missing. */
  const lockedEndpoint = async (
    trx: Transaction<Tables>,
    applicationId: string,
    kind: EndpointKind,
    endpointId: string,
  ): Promise<EndpointRow> => {
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
  };

  const stopPendingIn = async (q: Kysely<Tables>, endpointId: string, except?: string): Promise<string[]> => {
    let update = q
      .updateTable('webhook_deliveries')
      .set({ status: 'failed', updated_at: sql<Date>`now()` })
      .where('endpoint_id', '=', endpointId)
      .where('status', '=', 'ready')
      .where('sends_when_disabled', '=', false)
      .where('destination', '=', 'endpoint');
    if (except !== undefined) update = update.where('delivery_id', '!=', except);
    const rows = await update.returning('delivery_id').execute();
    return rows.map((r) => r.delivery_id);
  };

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
      return db.transaction().execute(async (trx) => {
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
      return db.transaction().execute(async (trx) => {
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

    async createDelivery(d) {
      return db
        .insertInto('webhook_deliveries')
        .values({
          delivery_id: d.deliveryId,
          endpoint_id: d.endpoint.endpoint_id,
          application_id: d.endpoint.application_id,
          event: d.event,
          event_code: d.eventCode,
          url: d.feedbackUrl ?? d.endpoint.url ?? '',
          destination: d.feedbackUrl !== undefined ? 'feedback' : 'endpoint',
          content_type: d.contentType ?? 'application/json',
          status: 'ready',
          max_retry: d.endpoint.retry_count,
          tags: JSON.stringify(d.tags),
          payload_sealed: cipher.seal(d.body, bodyContext(d.deliveryId)),
          sends_when_disabled: d.sendsWhenDisabled,
          created_at: d.createdAt,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    },

    async deleteDelivery(deliveryId) {
      await db.deleteFrom('webhook_deliveries').where('delivery_id', '=', deliveryId).execute();
    },

    async findDelivery(deliveryId) {
      return db.selectFrom('webhook_deliveries').selectAll().where('delivery_id', '=', deliveryId).executeTakeFirst();
    },

    deliveryBody(row) {
      return cipher.open(row.payload_sealed, bodyContext(row.delivery_id));
    },

    async listDeliveries(endpointId, page, per, destination) {
      const base = () => {
        const q = db.selectFrom('webhook_deliveries').where('endpoint_id', '=', endpointId);
        return destination === undefined ? q : q.where('destination', '=', destination);
      };
      const { n } = await base()
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      const rows = await base()
        .selectAll()
        .orderBy('created_at', 'desc')
        .orderBy('delivery_id', 'desc')
        .limit(per)
        .offset((page - 1) * per)
        .execute();
      const attempts =
        rows.length === 0
          ? []
          : await db
              .selectFrom('webhook_attempts')
              .selectAll()
              .where(
                'delivery_id',
                'in',
                rows.map((r) => r.delivery_id),
              )
              .orderBy('attempt')
              .execute();
      return {
        count: Number(n),
        rows: rows.map((r) => ({
          deliveryId: r.delivery_id,
          event: r.event,
          eventCode: r.event_code,
          url: r.url,
          destination: r.destination as DeliveryDestination,
          state: r.status as DeliveryState,
          retryCount: r.retry_count,
          maxRetry: r.max_retry,
          tags: r.tags,
          createdAt: r.created_at,
          attempts: attempts.filter((a) => a.delivery_id === r.delivery_id).map(attemptView),
        })),
      };
    },

    async failedSince(endpointId, since, limit) {
      return db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('endpoint_id', '=', endpointId)
        .where('status', '=', 'failed')
        .where('created_at', '>=', since)
        .orderBy('created_at')
        .orderBy('delivery_id')
        .limit(limit)
        .execute();
    },

    async reopenFailed(deliveryId) {
      return db
        .updateTable('webhook_deliveries')
        .set({ status: 'ready', sends_when_disabled: true, updated_at: sql<Date>`now()` })
        .where('delivery_id', '=', deliveryId)
        .where('status', '=', 'failed')
        .returningAll()
        .executeTakeFirst();
    },

    stopPending(endpointId) {
      return stopPendingIn(db, endpointId);
    },

    async possiblyOrphaned(createdBefore, doingBefore, limit) {
      return db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where((eb) =>
          eb.or([
            eb.and([eb('status', '=', 'ready'), eb('retry_count', '=', 0), eb('created_at', '<', createdBefore)]),
            eb.and([eb('status', '=', 'doing'), eb('updated_at', '<', doingBefore)]),
          ]),
        )
        .orderBy('created_at')
        .orderBy('delivery_id')
        .limit(limit)
        .execute();
    },

    async findAttempt(deliveryId, attempt) {
      return db
        .selectFrom('webhook_attempts')
        .selectAll()
        .where('delivery_id', '=', deliveryId)
        .where('attempt', '=', attempt)
        .executeTakeFirst();
    },

    async claimAttempt(deliveryId, attempt) {
      const row = await db
        .updateTable('webhook_deliveries as d')
        .from('webhook_endpoints as e')
        .set({ status: 'doing', updated_at: sql<Date>`now()` })
        .whereRef('e.endpoint_id', '=', 'd.endpoint_id')
        .where('d.delivery_id', '=', deliveryId)
        .where('d.status', 'in', ['ready', 'doing'])
        .where('e.secret_sealed', 'is not', null)
        .where((eb) =>
          eb.or([eb('e.enabled', '=', true), eb('d.destination', '=', 'feedback'), eb('d.sends_when_disabled', '=', true)]),
        )
        .where((eb) =>
          eb.not(
            eb.exists(
              eb
                .selectFrom('webhook_attempts as a')
                .select('a.attempt')
                .whereRef('a.delivery_id', '=', 'd.delivery_id')
                .where('a.attempt', '=', attempt),
            ),
          ),
        )
        .returningAll('d')
        .returning([
          'e.secret_sealed as e_secret_sealed',
          'e.previous_secret_sealed as e_previous_secret_sealed',
          'e.previous_secret_expires_at as e_previous_secret_expires_at',
        ])
        .executeTakeFirst();
      if (!row) return undefined;
      const { e_secret_sealed, e_previous_secret_sealed, e_previous_secret_expires_at, ...delivery } = row;
      return {
        delivery,
        signing: {
          endpoint_id: delivery.endpoint_id,
          secret_sealed: e_secret_sealed,
          previous_secret_sealed: e_previous_secret_sealed,
          previous_secret_expires_at: e_previous_secret_expires_at,
        },
      };
    },

    async markDoing(deliveryId) {
      const row = await db
        .updateTable('webhook_deliveries')
        .set({ status: 'doing', updated_at: sql<Date>`now()` })
        .where('delivery_id', '=', deliveryId)
        .where('status', 'in', ['ready', 'doing'])
        .returning('delivery_id')
        .executeTakeFirst();
      return row !== undefined;
    },

    async markFailed(deliveryId) {
      await db
        .updateTable('webhook_deliveries')
        .set({ status: 'failed', updated_at: sql<Date>`now()` })
        .where('delivery_id', '=', deliveryId)
        .where('status', 'in', ['ready', 'doing'])
        .execute();
    },

    async recordAttempt(deliveryId, r) {
      if (r.httpStatus !== null && r.httpStatus >= 200 && r.httpStatus < 300) {
        // a 2xx in one statement: whatever the delivery's and the endpoint's state, it ends done and resets the
        // endpoint's failure count (a feedback delivery leaves the endpoint alone); recorded once by its number
        const { rows } = await sql<{ inserted: number }>`
          with ins as (
            insert into webhook_attempts
              (delivery_id, attempt, attempted_at, duration_ms, http_status, response_body, error, retry_after_ms)
            values (${deliveryId}, ${r.attempt}, ${r.attemptedAt}, ${r.durationMs}, ${r.httpStatus},
              ${r.responseBody}, ${r.error}, ${r.retryAfterMs})
            on conflict (delivery_id, attempt) do nothing
            returning delivery_id),
          d as (
            update webhook_deliveries
            set status = 'done', retry_count = greatest(retry_count, ${r.attempt}), updated_at = now()
            where delivery_id = ${deliveryId} and exists (select 1 from ins)
            returning endpoint_id, destination),
          e as (
            update webhook_endpoints
            set consecutive_failures = 0, last_sent_at = ${r.attemptedAt}, last_status = ${r.httpStatus}, updated_at = now()
            where endpoint_id = (select endpoint_id from d where destination = 'endpoint')
            returning endpoint_id)
          select (select count(*) from ins)::int as inserted, (select count(*) from e)::int as touched`.execute(db);
        if (Number(rows[0]?.inserted) === 1) return { state: 'done', retryAfterMs: r.retryAfterMs, stoppedDeliveryIds: [] };
        // recorded by an earlier execution of this attempt: the transaction below reports what it left
      }
      return db.transaction().execute(async (trx) => {
        const inserted = await trx
          .insertInto('webhook_attempts')
          .values({
            delivery_id: deliveryId,
            attempt: r.attempt,
            attempted_at: r.attemptedAt,
            duration_ms: r.durationMs,
            http_status: r.httpStatus,
            response_body: r.responseBody,
            error: r.error,
            retry_after_ms: r.retryAfterMs,
          })
          .onConflict((oc) => oc.columns(['delivery_id', 'attempt']).doNothing())
          .returning('attempt')
          .executeTakeFirst();
        const delivery = await trx
          .selectFrom('webhook_deliveries')
          .selectAll()
          .where('delivery_id', '=', deliveryId)
          .forUpdate()
          .executeTakeFirstOrThrow();
        if (inserted === undefined) {
          // recorded by an earlier execution of this attempt: report what it left
          const earlier = await trx
            .selectFrom('webhook_attempts')
            .select('retry_after_ms')
            .where('delivery_id', '=', deliveryId)
            .where('attempt', '=', r.attempt)
            .executeTakeFirstOrThrow();
          return {
            state: delivery.status as DeliveryState,
            retryAfterMs: earlier.retry_after_ms === null ? null : Number(earlier.retry_after_ms),
            stoppedDeliveryIds: [],
          };
        }

        const succeeded = r.httpStatus !== null && r.httpStatus >= 200 && r.httpStatus < 300;
        const gone = r.httpStatus === 410;
        if (delivery.destination === 'feedback') {
          // a charge's feedback_url is not the endpoint: its answers leave the endpoint's health alone
          const state = stateAfterAttempt({ succeeded, attempt: r.attempt, lastAttempt: r.lastAttempt, endpointGone: gone });
          await trx
            .updateTable('webhook_deliveries')
            .set({ status: state, retry_count: sql<number>`greatest(retry_count, ${r.attempt})`, updated_at: sql<Date>`now()` })
            .where('delivery_id', '=', deliveryId)
            .execute();
          return { state, retryAfterMs: r.retryAfterMs, stoppedDeliveryIds: [] };
        }
        const endpoint = await trx
          .selectFrom('webhook_endpoints')
          .selectAll()
          .where('endpoint_id', '=', delivery.endpoint_id)
          .forUpdate()
          .executeTakeFirstOrThrow();
        const failures = succeeded ? 0 : endpoint.consecutive_failures + 1;
        const disableNow = endpoint.enabled && (gone || failures >= AUTO_DISABLE_AFTER_FAILURES);
        await trx
          .updateTable('webhook_endpoints')
          .set({
            consecutive_failures: failures,
            last_sent_at: r.attemptedAt,
            last_status: r.httpStatus,
            ...(disableNow ? { enabled: false, auto_disabled_at: r.attemptedAt } : {}),
            updated_at: sql<Date>`now()`,
          })
          .where('endpoint_id', '=', endpoint.endpoint_id)
          .execute();
        const stoppedDeliveryIds = disableNow ? await stopPendingIn(trx, endpoint.endpoint_id, deliveryId) : [];

        const endpointEnabled = endpoint.enabled && !disableNow;
        const state =
          delivery.status === 'failed' && !succeeded
            ? 'failed'
            : stateAfterAttempt({
                succeeded,
                attempt: r.attempt,
                lastAttempt: r.lastAttempt,
                endpointGone: gone || (!endpointEnabled && !delivery.sends_when_disabled),
              });
        await trx
          .updateTable('webhook_deliveries')
          .set({
            status: state,
            retry_count: sql<number>`greatest(retry_count, ${r.attempt})`,
            updated_at: sql<Date>`now()`,
          })
          .where('delivery_id', '=', deliveryId)
          .execute();
        return { state, retryAfterMs: r.retryAfterMs, stoppedDeliveryIds, endpointDisabled: disableNow };
      });
    },
  };
}
