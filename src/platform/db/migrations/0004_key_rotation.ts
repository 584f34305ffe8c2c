// Key rotation: a project's previous secret and private keys keep working until
// `previous_keys_expire_at` (the grace period the operator chose), then only the new ones do.
import { sql } from 'kysely';
import { defineMigration } from '../migrate.js';

export interface ProjectKeyRotationColumns {
  /** SHA-256 hex of the secret key before the last rotation; null when none is in its grace period */
  previous_secret_key_hash: string | null;
  previous_private_key_hash: string | null;
  /** when the previous keys stop working */
  previous_keys_expire_at: Date | null;
}

export interface KeyRotationTables {
  projects: ProjectKeyRotationColumns;
}

export const migration = defineMigration<KeyRotationTables>({
  name: '0004_key_rotation',
  async up(db) {
    await sql`alter table projects
      add column previous_secret_key_hash text,
      add column previous_private_key_hash text,
      add column previous_keys_expire_at timestamptz`.execute(db);
  },
});
