// Versioned migrations as TypeScript modules, applied in list order at open inside one transaction
// guarded by an advisory lock, so two processes starting against one Postgres do not race.
import { sql, type Kysely } from 'kysely';

/**
 * One migration. `TTables` is a phantom: the Kysely table types this migration creates, so the
 * database's `Tables` map is derived from the migration list (see migrations/index.ts).
 */
export interface Migration<TTables = unknown> {
  readonly name: string;
  up(db: Kysely<unknown>): Promise<void>;
  readonly tables?: TTables;
}

export function defineMigration<TTables>(migration: {
  name: string;
  up(db: Kysely<unknown>): Promise<void>;
}): Migration<TTables> {
  return migration;
}

// An arbitrary constant identifying paygate's migration lock.
const MIGRATION_LOCK_ID = 4_242_001;

export async function applyMigrations(db: Kysely<unknown>, migrations: readonly Migration[]): Promise<string[]> {
  const names = migrations.map((m) => m.name);
  if (new Set(names).size !== names.length) throw new Error('duplicate migration names');
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${MIGRATION_LOCK_ID})`.execute(trx);
    await sql`create table if not exists paygate_migrations (
      name text primary key,
      applied_at timestamptz not null default now()
    )`.execute(trx);
    const done = await sql<{ name: string }>`select name from paygate_migrations`.execute(trx);
    const applied = new Set(done.rows.map((r) => r.name));
    const newlyApplied: string[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.name)) continue;
      await migration.up(trx);
      await sql`insert into paygate_migrations (name) values (${migration.name})`.execute(trx);
      newlyApplied.push(migration.name);
    }
    return newlyApplied;
  });
}
