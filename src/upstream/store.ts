// A project's upstream provider configuration: one row per project. The provider's secret key is sealed with the
// project's id as associated data (a sealed value copied to another project's row does not open) and opened only
// when a provider call needs it; views carry it masked.
import type { Kysely, Selectable } from 'kysely';
import type { Tables } from '../platform/db/migrations/index.js';
import type { FieldCipher } from '../platform/security/field-cipher.js';
import { maskProviderSecret, type UpstreamConfigInput, type UpstreamView } from './rules.js';

type UpstreamRow = Selectable<Tables['upstreams']>;

/** What a provider call needs: the configuration with the secret opened. Never logged, never rendered. */
export interface UpstreamCredentials {
  readonly applicationId: string;
  readonly baseUrl: string;
  readonly clientKey: string;
  readonly secretKey: string;
  readonly pgs: readonly string[];
  readonly messageUrl: string | null;
}

export interface UpstreamStore {
  /** Creates or replaces the project's configuration; a replaced one forgets its last error. */
  put(applicationId: string, config: UpstreamConfigInput, now: Date): Promise<UpstreamView>;
  find(applicationId: string): Promise<UpstreamView | undefined>;
  credentials(applicationId: string): Promise<UpstreamCredentials | undefined>;
  /** The PG names the project's provider serves; undefined without a provider. */
  routedPgs(applicationId: string): Promise<readonly string[] | undefined>;
  /** true when there was one */
  remove(applicationId: string): Promise<boolean>;
  /**
   * Notes the provider's refusal of the configured keys (GET shows it until the configuration is replaced);
   * true when none was noted before, so the refusal is logged once per configuration.
   */
  recordKeyError(
    applicationId: string,
    error: { readonly code: number; readonly errorCode: string; readonly message: string },
    at: Date,
  ): Promise<boolean>;
}

const sealContext = (applicationId: string) => `upstreams.secret_key:${applicationId}`;

function toView(row: UpstreamRow, cipher: FieldCipher): UpstreamView {
  return {
    applicationId: row.application_id,
    baseUrl: row.base_url,
    clientKey: row.client_key,
    maskedSecretKey: maskProviderSecret(cipher.open(row.secret_key_sealed, sealContext(row.application_id))),
    pgs: row.pgs,
    messageUrl: row.message_url,
    lastError:
      row.last_error_at !== null && row.last_error_code !== null
        ? {
            code: row.last_error_code,
            errorCode: row.last_error_name ?? '',
            message: row.last_error_message ?? '',
            at: row.last_error_at,
          }
        : null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function createUpstreamStore(db: Kysely<Tables>, cipher: FieldCipher): UpstreamStore {
  const read = (applicationId: string) =>
    db.selectFrom('upstreams').selectAll().where('application_id', '=', applicationId).executeTakeFirst();

  return {
    async put(applicationId, config, now) {
      const values = {
        base_url: config.baseUrl,
        client_key: config.clientKey,
        secret_key_sealed: cipher.seal(config.secretKey, sealContext(applicationId)),
        pgs: JSON.stringify(config.pgs),
        message_url: config.messageUrl ?? null,
        last_error_code: null,
        last_error_name: null,
        last_error_message: null,
        last_error_at: null,
        updated_at: now,
      };
      const row = await db
        .insertInto('upstreams')
        .values({ application_id: applicationId, ...values, created_at: now })
        .onConflict((oc) => oc.column('application_id').doUpdateSet(values))
        .returningAll()
        .executeTakeFirstOrThrow();
      return toView(row, cipher);
    },

    async find(applicationId) {
      const row = await read(applicationId);
      return row && toView(row, cipher);
    },

    async credentials(applicationId) {
      const row = await read(applicationId);
      if (!row) return undefined;
      return {
        applicationId: row.application_id,
        baseUrl: row.base_url,
        clientKey: row.client_key,
        secretKey: cipher.open(row.secret_key_sealed, sealContext(row.application_id)),
        pgs: row.pgs,
        messageUrl: row.message_url,
      };
    },

    async routedPgs(applicationId) {
      const row = await db.selectFrom('upstreams').select('pgs').where('application_id', '=', applicationId).executeTakeFirst();
      return row?.pgs;
    },

    async remove(applicationId) {
      const result = await db.deleteFrom('upstreams').where('application_id', '=', applicationId).executeTakeFirst();
      return result.numDeletedRows > 0n;
    },

    async recordKeyError(applicationId, error, at) {
      const before = await db
        .selectFrom('upstreams')
        .select('last_error_at')
        .where('application_id', '=', applicationId)
        .executeTakeFirst();
      await db
        .updateTable('upstreams')
        .set({
          last_error_code: error.code,
          last_error_name: error.errorCode,
          last_error_message: error.message.slice(0, 500),
          last_error_at: at,
        })
        .where('application_id', '=', applicationId)
        .execute();
      return before !== undefined && before.last_error_at === null;
    },
  };
}
