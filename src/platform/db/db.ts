// Opens the system of record: a Postgres server through node-postgres when a URL is given, otherwise embedded
// PGlite: on disk under dataDir, served by a process of its own (npm start: pglite-process.ts) and reached with
// node-postgres as a server is, or in this process (in memory or on disk: tests, the OpenAPI document) through
// PGliteDialect. Migrations run at open.
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql, type Dialect } from 'kysely';
import pg from 'pg';
import { applyMigrations } from './migrate.js';
import { migrations, type Tables } from './migrations/index.js';
import { PGliteDialect } from './pglite-dialect.js';
import { makeOwnerOnly, openPGliteDirectory } from './pglite-files.js';
import { createDatabaseNotifications, type DatabaseNotifications } from './notifications.js';
import { type PGliteProcess, refuseIfServed, SOCKET_PORT, startPGliteProcess } from './pglite-process.js';

export type { Tables } from './migrations/index.js';

export interface Database {
  readonly db: Kysely<Tables>;
  /** 'postgres' for a server, 'pglite' for the embedded engine */
  readonly kind: 'postgres' | 'pglite';
  /** the embedded database's process (ownProcess): its pid, and its end, which the process that opened it watches */
  readonly process?: Pick<PGliteProcess, 'pid' | 'exited'>;
  /** LISTEN/NOTIFY between the deployment's processes: on a Postgres server only */
  readonly notifications?: DatabaseNotifications;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** postgres://... ; wins over dataDir/inMemory */
  readonly databaseUrl?: string;
  /** PGlite data directory */
  readonly dataDir?: string;
  /** PGlite in memory (the default when neither databaseUrl nor dataDir is given) */
  readonly inMemory?: boolean;
  /**
   * In memory: start from this dump of a cluster (`dumpMigratedCluster`) instead of an empty one. Creating a
   * cluster (initdb) is most of an open's seconds; test files that open many databases start from one dump.
   */
  readonly pgliteDump?: Uint8Array;
  /** PGlite on dataDir served by a process of its own, on a private unix socket (npm start); else in this process */
  readonly ownProcess?: boolean;
  /** a schema to create and use instead of public (tests isolate themselves with one) */
  readonly schema?: string;
  /** node-postgres pool size (a server's, or the connections that take turns on the PGlite process) */
  readonly poolSize?: number;
}

/**
 * Connections to the PGlite process: one. Its one session serves connections by turns anyway
 * (pglite-wire-server.ts), and with more connections the process spent more CPU per statement for no more
 * throughput (docs/design/platform.md). As with the in-process dialect's mutex, a transaction must run its
 * statements on the transaction, never wait on another statement of the pool.
 */
export const PGLITE_PROCESS_POOL_SIZE = 1;

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
  let pgliteProcess: PGliteProcess | undefined;
  let notifications: DatabaseNotifications | undefined;
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
    // A server that ends a connection (a restart, a failover, pg_terminate_backend, an idle timeout) emits an 'error'
    // on it. Without these listeners node-postgres throws it uncaught and the process dies: an idle connection is
    // dropped by the pool, and one in use fails its statement (its transaction is rolled back by the server) and is
    // dropped when released; the next statement gets a new connection.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
    notifications = createDatabaseNotifications(pool, { connectionString: opts.databaseUrl }, schema);
    dialect = new PostgresDialect({ pool });
  } else if (opts.ownProcess && opts.dataDir && !opts.inMemory) {
    kind = 'pglite';
    if (schema !== undefined) throw new Error('a schema of its own is for Postgres and in-process PGlite');
    pgliteProcess = await startPGliteProcess(opts.dataDir);
    const pool = new pg.Pool({
      host: pgliteProcess.socketDir,
      port: SOCKET_PORT,
      user: 'postgres',
      database: 'postgres',
      ssl: false,
      max: opts.poolSize ?? PGLITE_PROCESS_POOL_SIZE,
      types: pgTypes,
      // the socket is local and the process lives as long as this one: connections are kept, never re-made idle
      idleTimeoutMillis: 0,
    });
    // an idle connection that breaks is dropped by the pool; the process's end is reported by `exited`
    pool.on('error', () => undefined);
    // so is one in use (the pool stops listening while a connection is checked out): its statement fails, it is
    // dropped when released, and the process's death is reported once, by `exited`, not as an uncaught error
    pool.on('connect', (client) => client.on('error', () => undefined));
    dialect = new PostgresDialect({ pool });
  } else {
    kind = 'pglite';
    let pglite: PGlite;
    if (opts.dataDir && !opts.inMemory) {
      // not while a database process serves this cluster (npm start running: the admin CLI's --direct)
      await refuseIfServed(opts.dataDir);
      pglite = await openPGliteDirectory(opts.dataDir);
    } else {
      pglite = new PGlite(opts.pgliteDump ? { loadDataDir: new Blob([opts.pgliteDump]) } : {});
      await pglite.waitReady;
    }
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
    await pgliteProcess?.stop();
    throw err;
  }

  let closed = false;
  return {
    db,
    kind,
    ...(pgliteProcess ? { process: { pid: pgliteProcess.pid, exited: pgliteProcess.exited } } : {}),
    ...(notifications ? { notifications } : {}),
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
      // the process closes PGlite and sets the modes of what it wrote itself
      if (pgliteProcess) await pgliteProcess.stop();
      // files PGlite created while running (WAL segments, new relations) carry its own modes too
      else if (kind === 'pglite' && opts.dataDir && !opts.inMemory) await makeOwnerOnly(opts.dataDir);
    },
  };
}

/** An in-memory cluster with every migration applied, as PGlite's uncompressed dump (`pgliteDump` opens from it). */
export async function dumpMigratedCluster(): Promise<Uint8Array> {
  const pglite = new PGlite();
  try {
    await applyMigrations(new Kysely<unknown>({ dialect: new PGliteDialect(pglite) }), migrations);
    return new Uint8Array(await (await pglite.dumpDataDir('none')).arrayBuffer());
  } finally {
    await pglite.close();
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
