// Opens the system of record: a Postgres server through node-postgres when a URL is given,
// otherwise embedded PGlite (on disk under dataDir, or in memory). Migrations run at open.
import { chmod, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql, type Dialect } from 'kysely';
import pg from 'pg';
import { applyMigrations } from './migrate.js';
import { migrations, type Tables } from './migrations/index.js';
import { PGliteDialect } from './pglite-dialect.js';

export type { Tables } from './migrations/index.js';

export interface Database {
  readonly db: Kysely<Tables>;
  /** 'postgres' for a server, 'pglite' for the embedded engine */
  readonly kind: 'postgres' | 'pglite';
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** postgres://... ; wins over dataDir/inMemory */
  readonly databaseUrl?: string;
  /** PGlite data directory */
  readonly dataDir?: string;
  /** PGlite in memory (the default when neither databaseUrl nor dataDir is given) */
  readonly inMemory?: boolean;
  /** a schema to create and use instead of public (tests isolate themselves with one) */
  readonly schema?: string;
  /** node-postgres pool size */
  readonly poolSize?: number;
}

const INT8_OID = 20;
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function parseInt8(value: string): number | bigint {
  const big = BigInt(value);
  return big > BigInt(Number.MAX_SAFE_INTEGER) || big < BigInt(Number.MIN_SAFE_INTEGER) ? big : Number(big);
}

// Money and counts are bigint columns; read them as numbers on both engines (PGlite does the same).
const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID && format !== 'binary') return parseInt8;
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

export async function openDatabase(opts: OpenDatabaseOptions = {}): Promise<Database> {
  const schema = opts.schema;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name: ${schema}`);

  let dialect: Dialect;
  let kind: Database['kind'];
  if (opts.databaseUrl) {
    kind = 'postgres';
    if (schema !== undefined) {
      // create the schema once before the pool sets it as search_path on every connection
      const client = new pg.Client({ connectionString: opts.databaseUrl });
      await client.connect();
      try {
        await client.query(`create schema if not exists "${schema}"`);
      } finally {
        await client.end();
      }
    }
    const pool = new pg.Pool({
      connectionString: opts.databaseUrl,
      max: opts.poolSize ?? 10,
      types: pgTypes,
      connectionTimeoutMillis: 10_000,
      ...(schema !== undefined ? { options: `-c search_path=${schema}` } : {}),
    });
    dialect = new PostgresDialect({ pool });
  } else {
    kind = 'pglite';
    let pglite: PGlite;
    if (opts.dataDir && !opts.inMemory) {
      await mkdir(opts.dataDir, { recursive: true, mode: 0o700 });
      pglite = new PGlite(opts.dataDir);
    } else {
      pglite = new PGlite();
    }
    await pglite.waitReady;
    if (opts.dataDir && !opts.inMemory) await makeOwnerOnly(opts.dataDir);
    if (schema !== undefined) {
      await pglite.exec(`create schema if not exists "${schema}"; set search_path to "${schema}"`);
    }
    dialect = new PGliteDialect(pglite);
  }

  const db = new Kysely<Tables>({ dialect });
  try {
    await applyMigrations(db as unknown as Kysely<unknown>, migrations);
  } catch (err) {
    await db.destroy();
    throw err;
  }

  let closed = false;
  return {
    db,
    kind,
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
      // files PGlite created while running (WAL segments, new relations) carry its own modes too
      if (kind === 'pglite' && opts.dataDir && !opts.inMemory) await makeOwnerOnly(opts.dataDir);
    },
  };
}

/**
 * PGlite's file system layer sets file modes itself (0666 for the initial cluster, whatever the
 * umask): every directory becomes 0700 and every file 0600, so the data (client keys, masked cards,
 * sealed identities) is the owner's alone.
 */
async function makeOwnerOnly(dir: string): Promise<void> {
  await chmod(dir, 0o700);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) await makeOwnerOnly(full);
    else if (entry.isFile()) await chmod(full, 0o600);
  }
}

/** Readiness probe: the database answers a trivial query. */
export async function pingDatabase(database: Database): Promise<void> {
  await sql`select 1`.execute(database.db);
}

/** Drops a schema created for a test run (Postgres only; PGlite in memory disappears on close). */
export async function dropSchema(databaseUrl: string, schema: string): Promise<void> {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name: ${schema}`);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await client.end();
  }
}
