// Verification receipts. Every status change is guarded by the status it leaves, so a retried
// activity (Temporal retries on timeouts) changes nothing the second time. The workflow's records of a
// verification's steps are store-records.ts's; this store puts them together with the rest.
import { sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import type { OpenedPerson } from './rules.js';
import type { FieldCipher } from '../platform/security/field-cipher.js';
import { VerificationStatus, type VerificationRecords } from './contract.js';
import type { Tables } from '../platform/db/db.js';
import { ApiError } from '../platform/errors.js';
import { sealContext, transitionFrom, verificationRecords } from './store-records.js';
export type VerificationRow = Selectable<Tables['verifications']>;

/**
 * The receipt_id the merchant sees and names: the upstream provider's for a verification sent there (unique at the
 * provider for the project's account only, so kept beside paygate's own id, which the record's seals and the workflow
 * use), else paygate's own.
 */
export const merchantVerificationId = (row: Pick<VerificationRow, 'receipt_id' | 'provider_receipt_id'>): string =>
  row.provider_receipt_id ?? row.receipt_id;

export interface NewVerification {
  readonly receiptId: string;
  readonly applicationId: string;
  readonly authenticationId: string;
  readonly orderName: string;
  readonly pg: string;
  readonly type: 'sms' | 'pass';
  readonly metadata: Record<string, unknown>;
  readonly extra: Record<string, unknown>;
  readonly clientIp: string;
  readonly siteUrl?: string;
  readonly requestedAt: Date;
  /** the phone's keyed hash (sends-store.ts), kept while the OTP is awaited so resends count towards the phone's cap */
  readonly phoneIndex?: { readonly keyId: string; readonly mac: string };
  /** the upstream provider's receipt_id of a verification sent there */
  readonly providerReceiptId?: string | undefined;
}

export interface VerificationStore extends VerificationRecords {
  /** 9482 UPSTREAM_ID_REUSED, storing nothing, when the project already has a verification of the provider's id. */
  create(v: NewVerification): Promise<void>;
  /** By paygate's own id (the workflow's). */
  find(receiptId: string): Promise<VerificationRow | undefined>;
  /** By the receipt_id the merchant names: the project's verification of that id, else any project's (for 1225). */
  findNamed(applicationId: string, receiptId: string): Promise<VerificationRow | undefined>;
  /** The project's newest first, at most `limit` (the dashboard's lists). */
  listOf(applicationId: string, limit: number): Promise<VerificationRow[]>;
  openPerson(row: VerificationRow): OpenedPerson;
  /** Which of `tids` (gateway transaction ids) belong to verifications of `applicationId`. */
  tidsOf(applicationId: string, tids: readonly string[]): Promise<Set<string>>;
  /** Notes the Idempotency-Key (as its MAC) of a confirm about to be sent, while the OTP is awaited. */
  noteConfirmKey(receiptId: string, keyMac: string): Promise<void>;
  /** Paygate's ids of verifications still sending (status 50) since before `before`, oldest first, at most `limit`. */
  sendingSince(before: Date, limit: number): Promise<string[]>;
}

/** A new verification's row: sending, nothing sealed yet. */
function newVerificationRow(v: NewVerification): Insertable<Tables['verifications']> {
  return {
    receipt_id: v.receiptId,
    provider_receipt_id: v.providerReceiptId ?? null,
    application_id: v.applicationId,
    authentication_id: v.authenticationId,
    order_name: v.orderName,
    pg: v.pg,
    authenticate_type: v.type,
    status: VerificationStatus.Sending,
    tid: null,
    metadata: JSON.stringify(v.metadata),
    extra: JSON.stringify(v.extra),
    client_ip: v.clientIp,
    site_url: v.siteUrl ?? null,
    name_sealed: null,
    phone_sealed: null,
    birth_sealed: null,
    unique_sealed: null,
    di_sealed: null,
    gender: null,
    foreigner: null,
    carrier: null,
    failure_error_name: null,
    failure_pg_error_code: null,
    requested_at: v.requestedAt,
    phone_key_id: v.phoneIndex?.keyId ?? null,
    phone_mac: v.phoneIndex?.mac ?? null,
    authenticated_at: null,
    expired_at: null,
    identifiers_purged_at: null,
  };
}

export function createVerificationStore(db: Kysely<Tables>, cipher: FieldCipher): VerificationStore {
  const open = (receiptId: string, field: string, value: string | null) =>
    value === null ? undefined : cipher.open(value, sealContext(receiptId, field));

  return {
    ...verificationRecords(db, cipher),

    async create(v) {
      const inserted = await db
        .insertInto('verifications')
        .values(newVerificationRow(v))
        // paygate's own id is new: only the provider's can be taken (the provider repeated itself)
        .onConflict((oc) => oc.doNothing())
        .returning('receipt_id')
        .executeTakeFirst();
      if (!inserted) {
        throw new ApiError('UPSTREAM_ID_REUSED', {
          message: 'The upstream provider answered with a receipt_id that another verification of this project already has.',
        });
      }
    },

    async findNamed(applicationId, receiptId) {
      return db
        .selectFrom('verifications')
        .selectAll()
        .where((eb) =>
          eb.or([
            eb('provider_receipt_id', '=', receiptId),
            eb.and([eb('receipt_id', '=', receiptId), eb('provider_receipt_id', 'is', null)]),
          ]),
        )
        .orderBy(sql`application_id = ${applicationId}`, 'desc')
        .limit(1)
        .executeTakeFirst();
    },

    async find(receiptId) {
      return db.selectFrom('verifications').selectAll().where('receipt_id', '=', receiptId).executeTakeFirst();
    },

    async listOf(applicationId, limit) {
      return db
        .selectFrom('verifications')
        .selectAll()
        .where('application_id', '=', applicationId)
        .orderBy('requested_at', 'desc')
        .orderBy('receipt_id', 'desc')
        .limit(limit)
        .execute();
    },

    async tidsOf(applicationId, tids) {
      if (tids.length === 0) return new Set();
      const rows = await db
        .selectFrom('verifications')
        .select('tid')
        .where('application_id', '=', applicationId)
        .where('tid', 'in', [...tids])
        .execute();
      return new Set(rows.flatMap((r) => (r.tid === null ? [] : [r.tid])));
    },

    openPerson(row) {
      const r = row.receipt_id;
      const person: OpenedPerson = {
        name: open(r, 'name', row.name_sealed),
        phone: open(r, 'phone', row.phone_sealed),
        birth: open(r, 'birth', row.birth_sealed),
        gender: row.gender ?? undefined,
        foreigner: row.foreigner ?? undefined,
        carrier: row.carrier ?? undefined,
        unique: open(r, 'unique', row.unique_sealed),
        di: open(r, 'di', row.di_sealed),
      };
      return Object.fromEntries(Object.entries(person).filter(([, v]) => v !== undefined)) as OpenedPerson;
    },

    async sendingSince(before, limit) {
      const rows = await db
        .selectFrom('verifications')
        .select('receipt_id')
        .where('status', '=', VerificationStatus.Sending)
        .where('updated_at', '<', before)
        .orderBy('updated_at')
        .limit(limit)
        .execute();
      return rows.map((r) => r.receipt_id);
    },

    async noteConfirmKey(receiptId, keyMac) {
      await transitionFrom(db, receiptId, VerificationStatus.AwaitingOtp).set({ confirm_key_mac: keyMac }).execute();
    },
  };
}
