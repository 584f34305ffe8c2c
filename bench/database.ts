/**
 * The embedded database's cost to the API's thread: PGlite in this process (PGliteDialect, as the tests open it)
 * against PGlite in its own process over its unix socket (npm start: src/platform/db/pglite-process.ts), with one
 * connection and with several taking turns. Each transaction is the shape of a store's: a row read, an update, a
 * second read, in a transaction. Prints, per mode, the time per transaction with one caller and the throughput with
 * 32, the CPU of this process's main thread per transaction and that of the database process.
 *
 *   npx tsx bench/database.ts                   # every mode, 3,000 transactions each
 *   npx tsx bench/database.ts -n 10000 --only in-process,process-1
 *
 * Prints figures; never a test.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type Kysely, sql } from 'kysely';
import { type Database, openDatabase } from '../src/platform/db/db.js';
import { cpuMs } from './proc-stats.js';

const { values } = parseArgs({ options: { n: { type: 'string', short: 'n' }, only: { type: 'string' } } });
const TRANSACTIONS = Number(values.n ?? 3000);
const CALLERS = 32;
const MODES = {
  'in-process': { ownProcess: false, poolSize: undefined },
  'process-1': { ownProcess: true, poolSize: 1 },
  'process-8': { ownProcess: true, poolSize: 8 },
} as const;

/** This process's main thread only (helper threads, GC included elsewhere, do not block the event loop). */
const mainThreadMs = () => cpuMs(process.pid, process.pid);

interface Accounts {
  accounts: { id: number; n: number; note: string };
}

async function transaction(db: Kysely<Accounts>, i: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('accounts')
      .selectAll()
      .where('id', '=', (i % 1000) + 1)
      .executeTakeFirstOrThrow();
    await trx
      .updateTable('accounts')
      .set({ n: row.n + 1 })
      .where('id', '=', row.id)
      .execute();
    await trx
      .selectFrom('accounts')
      .select('note')
      .where('id', '=', ((i * 7) % 1000) + 1)
      .execute();
  });
}

const root = await mkdtemp(join(tmpdir(), 'paygate-bench-database-'));
try {
  const names = Object.keys(MODES).filter((m) => !values.only || values.only.split(',').includes(m)) as (keyof typeof MODES)[];
  console.log(`bench:database  ${TRANSACTIONS} transactions per measurement, ${CALLERS} callers`);
  console.log('| mode | 1 caller | 32 callers | main thread CPU per transaction | database process CPU per transaction |');
  console.log('|---|---|---|---|---|');
  for (const name of names) {
    const mode = MODES[name];
    const database: Database = await openDatabase({
      dataDir: join(root, name, 'pglite'),
      ownProcess: mode.ownProcess,
      ...(mode.poolSize ? { poolSize: mode.poolSize } : {}),
    });
    try {
      const db = database.db as unknown as Kysely<Accounts>;
      await sql`create table accounts (id int primary key, n int not null, note text not null)`.execute(db);
      await sql`insert into accounts select g, 0, repeat('x', 100) from generate_series(1, 1000) g`.execute(db);
      for (let i = 0; i < 200; i++) await transaction(db, i); // warm-up

      const single = Math.max(1, Math.floor(TRANSACTIONS / 6));
      let started = performance.now();
      for (let i = 0; i < single; i++) await transaction(db, i);
      const perTransactionMs = (performance.now() - started) / single;

      const threadBefore = mainThreadMs();
      const databaseBefore = cpuMs(database.process?.pid);
      let next = 0;
      started = performance.now();
      await Promise.all(
        Array.from({ length: CALLERS }, async () => {
          while (next < TRANSACTIONS) await transaction(db, next++);
        }),
      );
      const perSecond = TRANSACTIONS / ((performance.now() - started) / 1000);
      const thread = (mainThreadMs() - threadBefore) / TRANSACTIONS;
      const databaseCpu = database.process
        ? `${((cpuMs(database.process.pid) - databaseBefore) / TRANSACTIONS).toFixed(2)} ms`
        : '-';
      console.log(
        `| ${name} | ${perTransactionMs.toFixed(2)} ms | ${perSecond.toFixed(0)} /s | ${thread.toFixed(2)} ms | ${databaseCpu} |`,
      );
    } finally {
      await database.close();
    }
  }
} finally {
  await rm(root, { recursive: true, force: true });
}
