// Projects: a merchant application with its keys (stored as hashes) and settings. The rules for
// creating and changing them live in src/projects/service.ts.
import { transactionally } from '../platform/db/transaction.js';
import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import type { RotatingKey } from './key-rotation.js';
import type { Tables } from '../platform/db/migrations/index.js';

export type ProjectRow = Selectable<Tables['projects']>;

/** The authenticated project as routes see it: the row without the key hashes, plus `id`. */
export type Project = Omit<
  ProjectRow,
  'secret_key_hash' | 'private_key_hash' | 'previous_secret_key_hash' | 'previous_private_key_hash'
> & { readonly id: string };

export function toProject(row: ProjectRow): Project {
  const {
    secret_key_hash: _s,
    private_key_hash: _p,
    previous_secret_key_hash: _ps,
    previous_private_key_hash: _pp,
    ...rest
  } = row;
  return { ...rest, id: row.application_id };
}

/** The secret key (Basic auth) or private key (token issuance) of a project, as `keyAccepted` checks it. */
export function projectKey(row: ProjectRow, kind: 'secret' | 'private'): RotatingKey {
  return kind === 'secret'
    ? { current: row.secret_key_hash, previous: row.previous_secret_key_hash, previousExpiresAt: row.previous_keys_expire_at }
    : { current: row.private_key_hash, previous: row.previous_private_key_hash, previousExpiresAt: row.previous_keys_expire_at };
}

export interface KeyRotation {
  readonly secretKeyHash: string;
  readonly privateKeyHash: string;
  /** until when the replaced keys keep working; null: they stop now */
  readonly previousKeysExpireAt: Date | null;
  readonly now: Date;
}

export interface ProjectStore {
  insert(values: Insertable<Tables['projects']>): Promise<Project>;
  /** The changed project, or undefined when there is no such project. */
  update(applicationId: string, changes: Updateable<Tables['projects']>): Promise<Project | undefined>;
  findById(applicationId: string): Promise<ProjectRow | undefined>;
  findByClientKey(clientKey: string): Promise<ProjectRow | undefined>;
  /** Oldest first. */
  list(): Promise<Project[]>;
  /**
   * Replaces the secret and private keys; the replaced ones become the previous keys (until
   * `previousKeysExpireAt`), and every access token of the project is deleted, in one transaction.
   * Undefined when there is no such project.
   */
  rotateKeys(applicationId: string, rotation: KeyRotation): Promise<Project | undefined>;
}

/**
 * How long a project read by its client key (or by its id) answers later reads in this process. Every project
 * request authenticates by that read, and every charge a workflow makes reads its project; a change made through
 * this store forgets at once, and one made by another process (a second API instance, `admin --direct`) shows
 * within this time.
 */
export const PROJECT_BY_CLIENT_KEY_REUSE_MS = 1_000;
const MAX_REUSED_PROJECTS = 10_000;

type ReusedProjects = Map<string, { readonly row: ProjectRow; readonly readAt: number }>;

export function createProjectStore(db: Kysely<Tables>): ProjectStore {
  const byClientKey: ReusedProjects = new Map();
  const byId: ReusedProjects = new Map();
  // Writes may change any key, scope or allow-list: forget everything rather than reason about which entry, before
  // the write and again after it; a read that overlapped a write keeps nothing (it may hold the row as it was).
  let generation = 0;
  const forget = () => {
    generation++;
    byClientKey.clear();
    byId.clear();
  };
  /** The row read within the reuse time, else read now (an unknown project is asked again every time). */
  const reused = async (
    reads: ReusedProjects,
    key: string,
    read: () => Promise<ProjectRow | undefined>,
  ): Promise<ProjectRow | undefined> => {
    const now = performance.now();
    const kept = reads.get(key);
    if (kept && now - kept.readAt < PROJECT_BY_CLIENT_KEY_REUSE_MS) return kept.row;
    const readGeneration = generation;
    const row = await read();
    if (row && readGeneration === generation) {
      reads.delete(key);
      if (reads.size >= MAX_REUSED_PROJECTS) reads.delete(reads.keys().next().value!);
      reads.set(key, { row, readAt: now });
    }
    return row;
  };
  const forgetAround = async <T>(write: () => Promise<T>): Promise<T> => {
    forget();
    try {
      return await write();
    } finally {
      forget();
    }
  };

  return {
    async insert(values) {
      return toProject(await db.insertInto('projects').values(values).returningAll().executeTakeFirstOrThrow());
    },

    async update(applicationId, changes) {
      const row = await forgetAround(() =>
        db.updateTable('projects').set(changes).where('application_id', '=', applicationId).returningAll().executeTakeFirst(),
      );
      return row && toProject(row);
    },

    async findById(applicationId) {
      return reused(byId, applicationId, () =>
        db.selectFrom('projects').selectAll().where('application_id', '=', applicationId).executeTakeFirst(),
      );
    },

    async findByClientKey(clientKey) {
      // an unknown key is asked again every time: a project created elsewhere works at once
      return reused(byClientKey, clientKey, () =>
        db.selectFrom('projects').selectAll().where('client_key', '=', clientKey).executeTakeFirst(),
      );
    },

    async list() {
      const rows = await db.selectFrom('projects').selectAll().orderBy('created_at', 'asc').execute();
      return rows.map(toProject);
    },

    async rotateKeys(applicationId, rotation) {
      const graced = rotation.previousKeysExpireAt !== null;
      return forgetAround(() =>
        transactionally(db, async (trx) => {
          // right-hand sides read the row as it was, so the previous keys are the ones being replaced
          const row = await trx
            .updateTable('projects')
            .set((eb) => ({
              previous_secret_key_hash: graced ? eb.ref('secret_key_hash') : null,
              previous_private_key_hash: graced ? eb.ref('private_key_hash') : null,
              previous_keys_expire_at: rotation.previousKeysExpireAt,
              secret_key_hash: rotation.secretKeyHash,
              private_key_hash: rotation.privateKeyHash,
              updated_at: rotation.now,
            }))
            .where('application_id', '=', applicationId)
            .returningAll()
            .executeTakeFirst();
          if (!row) return undefined;
          await trx.deleteFrom('access_tokens').where('application_id', '=', applicationId).execute();
          return toProject(row);
        }),
      );
    },
  };
}
