// The verification sends paygate counted (table verification_sends, migration 0017): the caps of send-limit-rules.ts
// hold across API processes and restarts. A phone is counted by its keyed HMAC (keyring purpose 'phone-index'), never
// stored. Check and count are one transaction under an advisory lock on the project, so concurrent requests cannot
// both take the last send of a window (on Postgres; PGlite runs one transaction at a time anyway): two statements,
// the lock, then every limit's check with the project's expired rows swept and the send counted if none refused it.
// Windows are on the database's wall clock (clock_timestamp()), never the sandbox clock, and the same for every API
// process.
import { transactionally } from '../platform/db/transaction.js';
import { sql, type Kysely } from 'kysely';
import { UnknownKeyError, type Keyring } from '../platform/security/keyring.js';
import type { Tables } from '../platform/db/db.js';
import { retentionOf, type SendLimit, type SendLimitHit, type SendLimits } from './send-limit-rules.js';

/** A phone's keyed hash: HMAC-SHA256 under the 'phone-index' subkey of key `keyId`. */
export interface PhoneIndex {
  readonly keyId: string;
  readonly mac: string;
}

export interface SendToCount {
  readonly applicationId: string;
  /**
   * The phone: given (a request), or as a verification stored its index (a resend); undefined for a verification from
   * before the caps, which counts towards the project's limits only.
   */
  readonly phone: { readonly number: string } | { readonly index: PhoneIndex } | undefined;
  readonly kind: 'request' | 'resend';
  readonly limits: SendLimits;
}

export type SendReservation =
  | { readonly counted: true; readonly id: number }
  | { readonly counted: false; readonly hit: SendLimitHit };

export interface VerificationSendStore {
  /** The phone's index under the current key, as a verification keeps it for its resends. */
  phoneIndex(phone: string): PhoneIndex;
  /**
   * Counts the send if every limit allows one more, else answers the limit that refused it (the one whose window
   * frees last, so its Retry-After is when a send can pass them all) and counts nothing.
   */
  reserve(send: SendToCount): Promise<SendReservation>;
  /** Uncounts a send that was never attempted after all (the workflow refused the resend before sending). */
  release(id: number): Promise<void>;
}

/** Rows outside every window are swept at most this often by whichever send comes along (each project's own at every send). */
const SWEEP_INTERVAL_MS = 60 * 60 * 1000;

interface LimitCheck {
  readonly scope: SendLimitHit['scope'];
  readonly limit: SendLimit;
}

/** The row a send is counted as: the phone's index (none for a verification from before the caps) and its kind. */
interface SendRow {
  readonly applicationId: string;
  readonly stored: PhoneIndex | undefined;
  readonly kind: SendToCount['kind'];
}

/**
 * Every limit's check and the send's count in one statement: for each limit, the newest `max`-th send of its window
 * (if there are `max`), which says when the next may pass; the send inserted only when no limit has one; and the
 * project's rows past every window deleted (data-modifying CTEs: the checks read the table as it was, no deleted
 * row is in any window, and the new row is in none of the checks).
 */
async function checkAndCount(
  trx: Kysely<Tables>,
  checks: readonly LimitCheck[],
  send: SendRow,
  now: Date,
  retentionMs: number,
  macs: readonly string[] | undefined,
): Promise<{ readonly hits: SendLimitHit[]; readonly id: number | undefined }> {
  const { applicationId } = send;
  const cutoff = new Date(now.getTime() - retentionMs);
  const blocking = checks.map(({ scope, limit }, i) => {
    const since = new Date(now.getTime() - limit.windowMs);
    const ofPhone = scope === 'phone' ? sql`and phone_mac in (${sql.join(macs ?? [])})` : sql``;
    return sql`(select sent_at from verification_sends where application_id = ${applicationId} and sent_at > ${since}
      ${ofPhone} order by sent_at desc offset ${limit.max - 1} limit 1) as ${sql.ref(`c${i}`)}`;
  });
  const allowed =
    checks.length > 0
      ? sql.join(
          checks.map((_, i) => sql`${sql.ref(`c${i}`)} is null`),
          sql` and `,
        )
      : sql`true`;
  const { rows } = await sql<Record<string, Date | string | null>>`
    with swept as (
      delete from verification_sends where application_id = ${applicationId} and sent_at <= ${cutoff}
    ),
    checked as (select ${blocking.length > 0 ? sql.join(blocking) : sql`1 as none`}),
    counted as (
      insert into verification_sends (application_id, phone_key_id, phone_mac, kind)
      select ${applicationId}::text, ${send.stored?.keyId ?? null}::text, ${send.stored?.mac ?? null}::text, ${send.kind}::text
      from checked where ${allowed}
      returning id
    )
    select checked.*, (select id from counted) as counted_id from checked`.execute(trx);
  const found = rows[0] ?? {};
  const hits = checks.flatMap(({ scope, limit }, i) => {
    const sentAt = found[`c${i}`];
    // node-postgres and PGlite both parse timestamptz to a Date
    return sentAt ? [{ scope, limit, retryAfterMs: new Date(sentAt).getTime() + limit.windowMs - now.getTime() }] : [];
  });
  // a bigint: node-postgres answers it as a string
  const id = found.counted_id === null || found.counted_id === undefined ? undefined : Number(found.counted_id);
  return { hits, id };
}

export function createVerificationSendStore(db: Kysely<Tables>, keyring: Keyring): VerificationSendStore {
  const macUnder = (phone: string, keyId: string) => keyring.mac('phone-index', phone, keyId).digest;
  let lastSweep = 0;

  return {
    phoneIndex(phone) {
      const { keyId, digest } = keyring.mac('phone-index', phone);
      return { keyId, mac: digest };
    },

    async reserve(send) {
      const retentionMs = retentionOf(send.limits);
      const retentionSeconds = Math.ceil(retentionMs / 1000);
      if (Date.now() - lastSweep >= SWEEP_INTERVAL_MS) {
        lastSweep = Date.now();
        await db
          .deleteFrom('verification_sends')
          .where('sent_at', '<', sql<Date>`clock_timestamp() - make_interval(secs => ${retentionSeconds})`)
          .execute();
      }
      return transactionally(db, async (trx): Promise<SendReservation> => {
        // one project's sends are counted one at a time, in every API process; the lock taken, the database's time
        // and the keys the project's sends are stored under, in one round trip (the CTE is evaluated first). The
        // key list reads the statement's snapshot, taken before the lock: a send committed while this one waited
        // was stored under the keyring's current key, which the phone's hashes always include. The checks below
        // are a statement of their own, after the lock, and see every send committed before it.
        const locked = (
          await sql<{ now: Date; key_ids: string[] | null }>`
            with locked as (select pg_advisory_xact_lock(hashtextextended(${`paygate:verification-sends:${send.applicationId}`}, 0)))
            select clock_timestamp() as now,
              (select array_agg(distinct phone_key_id) from verification_sends
                where application_id = ${send.applicationId} and phone_key_id is not null) as key_ids
            from locked`.execute(trx)
        ).rows[0]!;
        const now = new Date(locked.now);

        // the phone's hash under every key that counted a send of the project still kept (a rotation between two
        // sends to one phone still finds the first), and the one the new send is stored under
        let stored: PhoneIndex | undefined;
        let macs: string[] | undefined;
        if (send.phone && 'index' in send.phone) {
          stored = send.phone.index;
          macs = [stored.mac];
        } else if (send.phone) {
          const phone = send.phone.number;
          const { keyId, digest } = keyring.mac('phone-index', phone);
          stored = { keyId, mac: digest };
          macs = [digest];
          for (const other of locked.key_ids ?? []) {
            if (other === keyId) continue;
            try {
              macs.push(macUnder(phone, other));
            } catch (err) {
              // a key dropped from the keyring: its sends can no longer be matched to a phone
              if (!(err instanceof UnknownKeyError)) throw err;
            }
          }
        }

        const checks: LimitCheck[] = [
          ...(macs ? send.limits.perPhone.map((limit) => ({ scope: 'phone' as const, limit })) : []),
          ...send.limits.perProject.map((limit) => ({ scope: 'project' as const, limit })),
        ];
        const { hits, id } = await checkAndCount(
          trx,
          checks,
          { applicationId: send.applicationId, stored, kind: send.kind },
          now,
          retentionMs,
          macs,
        );
        const binding = hits.reduce<SendLimitHit | undefined>(
          (a, b) => (a && a.retryAfterMs >= b.retryAfterMs ? a : b),
          undefined,
        );
        if (binding) return { counted: false, hit: binding };
        if (id === undefined) throw new Error('a send no limit refused was not counted');
        return { counted: true, id };
      });
    },

    async release(id) {
      await db.deleteFrom('verification_sends').where('id', '=', id).execute();
    },
  };
}
