// The store on both engines: PGlite (embedded) always, and the Postgres server when DATABASE_URL
// is set (CI runs the suite a second time with it).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyMigrations, defineMigration } from '../../src/platform/db/migrate.js';
import {
  dropSchema,
  openDatabase,
  pingDatabase,
  type Database,
  type OpenDatabaseOptions,
  type Tables,
} from '../../src/platform/db/db.js';
import { migrations } from '../../src/platform/db/migrations/index.js';

const databaseUrl = process.env.DATABASE_URL;
const schemas: string[] = [];

function freshOptions(): OpenDatabaseOptions {
  if (!databaseUrl) return { inMemory: true };
  const schema = `t_${randomBytes(8).toString('hex')}`;
  schemas.push(schema);
  return { databaseUrl, schema };
}

afterAll(async () => {
  if (databaseUrl) for (const schema of schemas) await dropSchema(databaseUrl, schema);
});

describe(`store on ${databaseUrl ? 'Postgres' : 'PGlite'}`, () => {
  let database: Database;
  beforeAll(async () => {
    database = await openDatabase(freshOptions());
    await sql`create table scratch (id serial primary key, amount bigint not null, at timestamptz not null, data jsonb not null, counter int not null default 0)`.execute(
      database.db,
    );
  });
  afterAll(async () => {
    await database?.close();
  });

  it('applies every migration at open, in order, once', async () => {
    const rows = await sql<{ name: string }>`select name from paygate_migrations order by applied_at, name`.execute(database.db);
    expect(rows.rows.map((r) => r.name)).toEqual(migrations.map((m) => m.name));
    expect(await applyMigrations(database.db as never, migrations)).toEqual([]);
    expect(database.kind).toBe(databaseUrl ? 'postgres' : 'pglite');
    await expect(pingDatabase(database)).resolves.toBeUndefined();
  });

  it('round-trips integer won beyond 2^31, timestamptz as Date, jsonb as values', async () => {
    const at = new Date('2026-11-22T04:05:01.123Z');
    const inserted = await sql<{
      id: number;
    }>`insert into scratch (amount, at, data) values (${5_000_000_000}, ${at}, ${JSON.stringify({ a: [1, 'x'] })}) returning id`.execute(
      database.db,
    );
    const row = await sql<{
      amount: number;
      at: Date;
      data: unknown;
    }>`select amount, at, data from scratch where id = ${inserted.rows[0]!.id}`.execute(database.db);
    expect(row.rows[0]).toEqual({ amount: 5_000_000_000, at, data: { a: [1, 'x'] } });
    expect(typeof row.rows[0]!.amount).toBe('number');
  });

  it('reports affected rows of writes', async () => {
    await sql`insert into scratch (amount, at, data) values (1, now(), '{}'), (2, now(), '{}')`.execute(database.db);
    const result = await sql`update scratch set counter = counter + 1 where amount in (1, 2)`.execute(database.db);
    expect(result.numAffectedRows).toBe(2n);
  });

  it('rolls a failed transaction back', async () => {
    const before = await sql<{ n: number }>`select count(*)::int as n from scratch`.execute(database.db);
    await expect(
      database.db.transaction().execute(async (trx) => {
        await sql`insert into scratch (amount, at, data) values (3, now(), '{}')`.execute(trx);
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    const after = await sql<{ n: number }>`select count(*)::int as n from scratch`.execute(database.db);
    expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
  });

  it('keeps concurrent transactions isolated (no lost updates with row locks)', async () => {
    const { rows } = await sql<{
      id: number;
    }>`insert into scratch (amount, at, data) values (0, now(), '{}') returning id`.execute(database.db);
    const id = rows[0]!.id;
    await Promise.all(
      Array.from({ length: 20 }, () =>
        database.db.transaction().execute(async (trx) => {
          const current = await sql<{ counter: number }>`select counter from scratch where id = ${id} for update`.execute(trx);
          await sql`update scratch set counter = ${current.rows[0]!.counter + 1} where id = ${id}`.execute(trx);
        }),
      ),
    );
    const final = await sql<{ counter: number }>`select counter from scratch where id = ${id}`.execute(database.db);
    expect(final.rows[0]!.counter).toBe(20);
  });

  it('a unique violation surfaces as a Postgres error code (23505) on both engines', async () => {
    const application = {
      application_id: 'a'.repeat(24),
      name: 'n',
      client_key: `ck-${randomBytes(4).toString('hex')}`,
      secret_key_hash: 'x',
      private_key_hash: 'y',
      seller: true,
      scopes: '[]',
      allowed_ips: '[]',
      api_version: '2.5',
      webhook_url: null,
      merchant: '{}',
      key_expires_at: null,
      pgs: '[]',
    };
    await database.db.insertInto('projects').values(application).execute();
    const error = await database.db
      .insertInto('projects')
      .values({ ...application, application_id: 'b'.repeat(24) })
      .execute()
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect((error as { code?: string }).code).toBe('23505');
  });
});

describe('PGlite dialect', () => {
  it('streams rows in chunks and serialises callers on its single session', async () => {
    const database = await openDatabase({ inMemory: true });
    try {
      await sql`create table many (n int)`.execute(database.db);
      await sql`insert into many select generate_series(1, 25)`.execute(database.db);
      const seen: number[] = [];
      for (const row of (await sql<{ n: number }>`select n from many order by n`.execute(database.db)).rows) seen.push(row.n);
      const streamed: number[] = [];
      for await (const row of (database.db as unknown as import('kysely').Kysely<{ many: { n: number } }>)
        .selectFrom('many')
        .select('n')
        .orderBy('n')
        .stream(10)) {
        streamed.push(row.n);
      }
      expect(streamed).toEqual(seen);
      expect(streamed).toHaveLength(25);

      // a transaction holds the session: a statement from outside waits until it commits
      const order: string[] = [];
      let releaseTx!: () => void;
      const txHeld = new Promise<void>((resolve) => (releaseTx = resolve));
      const tx = database.db.transaction().execute(async (trx) => {
        await sql`insert into many values (100)`.execute(trx);
        order.push('tx-insert');
        await txHeld;
        order.push('tx-commit');
      });
      const outside = sql<{ n: number }>`select count(*)::int as n from many`.execute(database.db).then((r) => {
        order.push('outside-read');
        return r.rows[0]!.n;
      });
      await new Promise((resolve) => setImmediate(resolve));
      releaseTx();
      await tx;
      expect(await outside).toBe(26);
      expect(order).toEqual(['tx-insert', 'tx-commit', 'outside-read']);
    } finally {
      await database.close();
    }
  });
});

describe('migrations', () => {
  it('apply once across reopen of the same data (PGlite directory, or a Postgres schema)', async () => {
    let opts: OpenDatabaseOptions;
    let dir: string | undefined;
    if (databaseUrl) {
      opts = freshOptions();
    } else {
      dir = await mkdtemp(join(tmpdir(), 'paygate-db-'));
      opts = { dataDir: dir };
    }
    try {
      const first = await openDatabase(opts);
      await sql`insert into paygate_migrations (name) values ('marker_from_first_open')`.execute(first.db);
      await first.close();

      const second = await openDatabase(opts);
      const names = await sql<{ name: string }>`select name from paygate_migrations`.execute(second.db);
      expect(names.rows.map((r) => r.name).sort()).toEqual([...migrations.map((m) => m.name), 'marker_from_first_open'].sort());
      await second.close();
    } finally {
      if (dir) await rm(dir, { recursive: true, force: true });
    }
  });

  it('a failing migration leaves nothing half-applied', async () => {
    const database = await openDatabase(freshOptions());
    try {
      const good = defineMigration<unknown>({
        name: '9001_good',
        async up(db) {
          await sql`create table m_good (id int)`.execute(db);
        },
      });
      const bad = defineMigration<unknown>({
        name: '9002_bad',
        async up(db) {
          await sql`create table m_bad (id int)`.execute(db);
          await sql`select * from no_such_table`.execute(db);
        },
      });
      await expect(applyMigrations(database.db as never, [...migrations, good, bad])).rejects.toThrow();
      const names = await sql<{ name: string }>`select name from paygate_migrations`.execute(database.db);
      expect(names.rows.map((r) => r.name)).not.toContain('9001_good');
      const tables = await sql<{
        n: number;
      }>`select count(*)::int as n from information_schema.tables where table_name in ('m_good', 'm_bad')`.execute(database.db);
      expect(tables.rows[0]!.n).toBe(0);
    } finally {
      await database.close();
    }
  });

  it('refuses duplicate migration names', async () => {
    const database = await openDatabase(freshOptions());
    try {
      await expect(applyMigrations(database.db as never, [...migrations, migrations[0]])).rejects.toThrow('duplicate');
    } finally {
      await database.close();
    }
  });
});

describe('isolation', () => {
  it('two databases opened for tests (PGlite instances, or Postgres schemas) do not see each other', async () => {
    const a = await openDatabase(freshOptions());
    const b = await openDatabase(freshOptions());
    try {
      await sql`insert into paygate_migrations (name) values ('only_in_a')`.execute(a.db);
      const inB = await sql<{ name: string }>`select name from paygate_migrations where name = 'only_in_a'`.execute(b.db);
      expect(inB.rows).toHaveLength(0);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('refuses a schema name that is not a plain identifier', async () => {
    await expect(openDatabase({ ...freshOptions(), schema: 'x"; drop table y; --' })).rejects.toThrow('invalid schema name');
  });
});

describe('a Postgres server that ends a connection', () => {
  const backendPid = async (db: Kysely<Tables>) =>
    (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]!.pid;
  const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

  it.skipIf(!databaseUrl)(
    'idle in the pool or inside a transaction: nothing is thrown uncaught, the next statement gets a new connection',
    async () => {
      const database = await openDatabase(freshOptions());
      const admin = new pg.Client({ connectionString: databaseUrl });
      await admin.connect();
      try {
        // an idle connection ended by the server (a restart or a failover does the same to every one)
        const idle = await backendPid(database.db);
        await admin.query('select pg_terminate_backend($1)', [idle]);
        await settle();
        // one ended between two statements of a transaction: that transaction fails, and only it
        const inTransaction = database.db.transaction().execute(async (trx) => {
          await admin.query('select pg_terminate_backend($1)', [await backendPid(trx)]);
          await settle();
          await sql`select 1`.execute(trx);
        });
        await expect(inTransaction).rejects.toThrow();
        await settle();
        const fresh = await backendPid(database.db);
        expect(fresh).not.toBe(idle);
        await pingDatabase(database);
      } finally {
        await admin.end();
        await database.close();
      }
    },
  );
});
