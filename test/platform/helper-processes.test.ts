// npm start's helper processes (src/platform/child-process.ts): the embedded database served by a process of its own
// over a private unix socket (src/platform/db/pglite-process.ts, pglite-wire-server.ts) as openConfiguredDatabase
// opens it, the sandbox PGs in theirs following the sandbox clock, and the process tree of src/main.ts: a killed
// main process leaves no helper behind, a killed helper takes the rest down.
import { freePort } from '../../tools/child-processes.js';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openConfiguredDatabase, startConfiguredGateways } from '../../src/composition/index.js';
import { parseConfig } from '../../src/platform/config/index.js';
import { migrations } from '../../src/platform/db/migrations/index.js';
import { createLogger } from '../../src/platform/logger.js';
import { testCard } from '../gateways/fixture.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dirs: string[] = [];
const spawned: ChildProcess[] = [];

afterAll(async () => {
  for (const child of spawned) {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) continue;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // the group has ended already
    }
  }
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'paygate-helpers-'));
  dirs.push(dir);
  return dir;
}

const alive = (pid: number) =>
  readFile(`/proc/${pid}/stat`, 'utf8').then(
    (stat) => !/^\d+ \(.*\) Z /.test(stat), // a zombie has ended
    () => false,
  );

async function until(check: () => Promise<boolean>, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The children of `pid` (Linux /proc), with their command lines. */
async function childrenOf(pid: number): Promise<{ pid: number; cmdline: string }[]> {
  const found: { pid: number; cmdline: string }[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (Number(stat.split(') ')[1]?.split(' ')[1]) !== pid) continue;
    found.push({
      pid: Number(entry),
      cmdline: (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' '),
    });
  }
  return found;
}

/** node with `args` in a process group of its own (afterAll SIGKILLs the group), its output collected. */
function spawnInGroup(args: string[], env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  spawned.push(child);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  return { child, output: () => output };
}

describe('the embedded database in its own process (npm start on PGlite)', () => {
  let dataDir: string;
  let database: Awaited<ReturnType<typeof openConfiguredDatabase>>;
  const config = () => parseConfig({ DATA_DIR: dataDir });
  const socketDir = () => path.join(dataDir, 'pglite-socket');

  beforeAll(async () => {
    dataDir = await tempDir();
    database = await openConfiguredDatabase(config());
    await sql`create table counters (id int primary key, n int not null)`.execute(database.db);
    await sql`insert into counters values (1, 0)`.execute(database.db);
    await sql`create table notes (body text not null)`.execute(database.db);
  }, 120_000);
  afterAll(async () => {
    await database?.close();
  });

  it('runs apart from this process, on a socket in a directory only its owner can enter, with the migrations applied', async () => {
    expect(database.kind).toBe('pglite');
    const pid = database.process!.pid;
    expect(pid).not.toBe(process.pid);
    expect(await readFile(`/proc/${pid}/cmdline`, 'utf8')).toContain('pglite-process-main');
    expect((await stat(socketDir())).mode & 0o777).toBe(0o700);
    expect(await readdir(socketDir(), { withFileTypes: true })).toEqual([expect.objectContaining({ name: '.s.PGSQL.5432' })]);
    const applied = await sql<{ name: string }>`select name from paygate_migrations order by applied_at, name`.execute(
      database.db,
    );
    expect(applied.rows.map((r) => r.name)).toEqual(migrations.map((m) => m.name));
    // the cluster stays where it was (an existing DATA_DIR keeps working)
    expect(await readdir(path.join(dataDir, 'pglite'))).toContain('PG_VERSION');
  });

  it('commits a transaction, rolls back a failed one', async () => {
    await database.db.transaction().execute(async (trx) => {
      await sql`insert into notes values ('kept')`.execute(trx);
    });
    await expect(
      database.db.transaction().execute(async (trx) => {
        await sql`insert into notes values ('dropped')`.execute(trx);
        await sql`select 1 / 0`.execute(trx);
      }),
    ).rejects.toThrow(/division by zero/);
    const notes = await sql<{ body: string }>`select body from notes order by body`.execute(database.db);
    expect(notes.rows.map((r) => r.body)).toEqual(['kept']);
  });

  it('a concurrent burst: transactions take turns on the one session (no lost update, no deadlock), each statement gets its own answer', async () => {
    const increments = Array.from({ length: 64 }, () =>
      database.db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ n: number }>`select n from counters where id = 1`.execute(trx);
        // another caller's statements arrive meanwhile; they wait until this transaction ends
        await new Promise((r) => setTimeout(r, 1));
        await sql`update counters set n = ${rows[0]!.n + 1} where id = 1`.execute(trx);
      }),
    );
    const echoes = Array.from({ length: 300 }, (_, i) =>
      sql<{ i: number; s: string }>`select ${i}::int as i, ${`value ${i}`}::text as s`.execute(database.db),
    );
    const answers = await Promise.all(echoes);
    await Promise.all(increments);
    expect(answers.map((a) => a.rows[0])).toEqual(Array.from({ length: 300 }, (_, i) => ({ i, s: `value ${i}` })));
    const { rows } = await sql<{ n: number }>`select n from counters where id = 1`.execute(database.db);
    expect(rows[0]!.n).toBe(64);
  });

  it('a client that dies inside its transaction: the transaction is rolled back and the others go on', async () => {
    const client = new pg.Client({ host: socketDir(), port: 5432, user: 'postgres', database: 'postgres' });
    client.on('error', () => undefined); // its connection is cut below, on purpose
    await client.connect();
    await client.query('begin');
    await client.query(`insert into notes values ('orphan')`);
    // the session is this client's until its transaction ends: a statement of the pool waits for it
    const waiting = sql<{ n: number }>`select count(*)::int as n from notes where body = 'orphan'`.execute(database.db);
    (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    const { rows } = await waiting;
    expect(rows[0]!.n).toBe(0);
    await database.db.transaction().execute(async (trx) => {
      await sql`insert into notes values ('after')`.execute(trx);
    });
    const notes = await sql<{ body: string }>`select body from notes order by body`.execute(database.db);
    expect(notes.rows.map((r) => r.body)).toEqual(['after', 'kept']);
  });

  it('refuses a second database on the same cluster while one serves it: a process, or the admin CLI --direct in its own', async () => {
    await expect(openConfiguredDatabase(config())).rejects.toThrow(/in use by another paygate process/);
    await expect(openConfiguredDatabase(config(), { inProcess: true })).rejects.toThrow(/in use by another paygate process/);
  }, 60_000);

  it('killed with SIGKILL: its end is reported, statements fail rather than hang, and what was committed is there after a restart', async () => {
    const { pid, exited } = database.process!;
    process.kill(pid, 'SIGKILL');
    expect(await exited).toBe('killed by SIGKILL');
    await expect(sql`select 1`.execute(database.db)).rejects.toThrow();
    await database.close();

    database = await openConfiguredDatabase(config());
    expect(database.process!.pid).not.toBe(pid);
    const notes = await sql<{ body: string }>`select body from notes order by body`.execute(database.db);
    expect(notes.rows.map((r) => r.body)).toEqual(['after', 'kept']);
    const { rows } = await sql<{ n: number }>`select n from counters where id = 1`.execute(database.db);
    expect(rows[0]!.n).toBe(64);
  }, 120_000);

  it('stopped: it closes in order and exits 0', async () => {
    const { exited } = database.process!;
    await database.close();
    expect(await exited).toBe('exit code 0');
  });
});

describe('an existing DATA_DIR', () => {
  it('a cluster written by PGlite in the process (as earlier releases ran it) opens in the database process', async () => {
    const dataDir = await tempDir();
    const config = parseConfig({ DATA_DIR: dataDir });
    const earlier = await openConfiguredDatabase(config, { inProcess: true });
    await sql`create table kept (body text not null)`.execute(earlier.db);
    await sql`insert into kept values ('from before')`.execute(earlier.db);
    await earlier.close();

    const database = await openConfiguredDatabase(config);
    try {
      expect(database.process).toBeDefined();
      const { rows } = await sql<{ body: string }>`select body from kept`.execute(database.db);
      expect(rows).toEqual([{ body: 'from before' }]);
    } finally {
      await database.close();
    }
  }, 120_000);
});

describe('the sandbox PGs in their own process', () => {
  const silent = createLogger({ level: 'silent' });

  it('learn the business clock when told, and their end is reported', async () => {
    const dataDir = await tempDir();
    const ahead = 40 * 24 * 3600_000; // an advanced sandbox clock
    let offset = 0;
    const gateways = await startConfiguredGateways(
      parseConfig({ PAYGATE_SANDBOX: 'true', DATA_DIR: dataDir }),
      silent,
      () => new Date(Date.now() + offset),
      { ownProcess: true },
    );
    try {
      const { pid, exited } = gateways.sandboxProcess!;
      expect(await readFile(`/proc/${pid}/cmdline`, 'utf8')).toContain('child-main');
      const card = gateways.gateways.get('sandbox_card')!.card!;
      const issue = (n: number) =>
        card.issueBillingKey({
          idempotencyKey: `clock-${n}-${pid}`,
          card: testCard(),
          orderName: 'clock',
          subscriptionId: `s-${n}`,
        });

      const before = await issue(1);
      expect(Math.abs(before.issuedAt.getTime() - Date.now())).toBeLessThan(60_000);
      offset = ahead;
      await gateways.syncSandboxClock!();
      const after = await issue(2);
      expect(Math.abs(after.issuedAt.getTime() - (Date.now() + ahead))).toBeLessThan(60_000);

      process.kill(pid, 'SIGKILL');
      expect(await exited).toBe('killed by SIGKILL');
    } finally {
      await gateways.close();
    }
  }, 120_000);
});

describe("npm start's process tree", () => {
  const ADMIN_TOKEN = 'helper-processes-admin-token-0123456789';

  /** src/main.ts as npm start runs it (its own process group), ready when /health answers 200. */
  async function startPaygate(dataDir: string): Promise<{ child: ChildProcess; output: () => string; url: string }> {
    const port = await freePort();
    const { child, output } = spawnInGroup(['--import', 'tsx', 'src/main.ts'], {
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_TOKEN,
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
    });
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`npm start exited (${child.exitCode}):\n${output().slice(-3000)}`);
        const res = await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined);
        await res?.arrayBuffer();
        return res?.status === 200;
      },
      'npm start to answer /health',
      150_000,
    );
    return { child, output, url: `http://127.0.0.1:${port}` };
  }

  // biome-ignore lint/suspicious/noExplicitAny: answers are read loosely, field by field
  async function call(url: string, auth: string, method: string, route: string, body?: unknown): Promise<any> {
    const res = await fetch(`${url}${route}`, {
      method,
      headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const answer = await res.json();
    if (res.status !== 200 && res.status !== 201) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(answer)}`);
    return answer;
  }

  const helpersOf = async (pid: number) => {
    const children = await childrenOf(pid);
    const named = (pattern: RegExp) => children.find((c) => pattern.test(c.cmdline))?.pid;
    return { database: named(/pglite-process-main/), sandbox: named(/sandbox\/child-main/), engine: named(/temporal-devserver/) };
  };

  let dataDir: string;
  it('the sandbox PGs stamp in the sandbox clock: a reserve charged by an advance, a charge after it; SIGKILL to the main process: every helper exits on its own', async () => {
    dataDir = await tempDir();
    const { child, url } = await startPaygate(dataDir);
    const admin = `Bearer ${ADMIN_TOKEN}`;
    const project = await call(url, admin, 'POST', '/admin/v1/projects', { name: 'helpers' });
    const keys = `Basic ${Buffer.from(`${project.client_key}:${project.secret_key}`).toString('base64')}`;
    const { billing_key: billingKey } = await call(url, keys, 'POST', '/v2/request/subscribe', {
      pg: 'sandbox_card',
      method: '카드자동(REST)',
      subscription_id: 'helpers-1',
      order_name: 'helpers',
      card_no: '4111111111111111',
      card_pw: '12',
      card_identity_no: '900101',
      card_expire_year: '39',
      card_expire_month: '12',
    });
    const day = 86_400_000;
    const before = new Date((await call(url, keys, 'GET', '/sandbox/v1/clock')).now).getTime();
    const reserve = await call(url, keys, 'POST', '/v2/subscribe/payment/reserve', {
      billing_key: billingKey,
      order_id: 'helpers-reserve',
      order_name: 'helpers',
      price: 1_000,
      reserve_execute_at: new Date(before + day - 60_000).toISOString(),
    });
    const advanced = await call(url, admin, 'POST', '/sandbox/v1/clock/advance', { seconds: 86_400 });
    expect(advanced.settled).toBe(true);
    // the reserve's charge ran in an activity the advance fired: the sandbox PG stamped it a day ahead
    const paid = await call(url, keys, 'GET', `/v2/subscribe/payment/reserve/${reserve.reserve_id}`);
    expect(paid.status).toBe('paid');
    const reserved = await call(url, keys, 'GET', `/v2/receipt/${paid.receipt_id}`);
    expect(new Date(reserved.purchased_at).getTime()).toBeGreaterThan(before + day - 120_000);
    // a charge the API makes after the advance: stamped in the advanced time too
    const charged = await call(url, keys, 'POST', '/v2/subscribe/payment', {
      billing_key: billingKey,
      order_id: 'helpers-charge',
      order_name: 'helpers',
      price: 1_000,
    });
    const receipt = await call(url, keys, 'GET', `/v2/receipt/${charged.receipt_id}`);
    expect(new Date(receipt.purchased_at).getTime()).toBeGreaterThan(before + day - 60_000);

    const helpers = await helpersOf(child.pid!);
    expect(
      Object.values(helpers).every((pid) => pid !== undefined),
      JSON.stringify(helpers),
    ).toBe(true);
    child.kill('SIGKILL');
    for (const [name, pid] of Object.entries(helpers)) await until(async () => !(await alive(pid!)), `${name} to exit`, 20_000);
  }, 240_000);

  it('started again on that DATA_DIR, then a helper killed with SIGKILL: npm start shuts the rest down and exits 1', async () => {
    const { child, output, url } = await startPaygate(dataDir);
    // what the first run wrote is there (its database closed itself when its parent was killed)
    const projects = await call(url, `Bearer ${ADMIN_TOKEN}`, 'GET', '/admin/v1/projects');
    expect(JSON.stringify(projects)).toContain('helpers');
    const helpers = await helpersOf(child.pid!);
    const code = new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    process.kill(helpers.database!, 'SIGKILL');
    expect(await code).toBe(1);
    expect(output()).toContain('a paygate process ended: shutting down');
    for (const [name, pid] of Object.entries(helpers)) await until(async () => !(await alive(pid!)), `${name} to exit`, 20_000);
  }, 240_000);
});

describe('the standalone API and worker on PGlite (npm run api, npm run worker)', () => {
  let temporalAddress: string;

  beforeAll(async () => {
    const dir = await tempDir();
    const port = await freePort();
    const { child, output } = spawnInGroup(
      [
        'bin/temporal-devserver',
        ...['server', 'start-dev', '--port', String(port), '--ip', '127.0.0.1', '--namespace', 'default'],
        ...['--db-filename', path.join(dir, 'temporal.db'), '--headless'],
      ],
      {},
    );
    const listening = () =>
      new Promise<boolean>((resolve) => {
        const socket = connect(port, '127.0.0.1');
        socket.once('connect', () => {
          socket.destroy();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
      });
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`the engine exited (${child.exitCode}):\n${output().slice(-3000)}`);
        return listening();
      },
      'the engine to listen',
      120_000,
    );
    temporalAddress = `127.0.0.1:${port}`;
  }, 150_000);

  it.each([
    { entry: 'src/api/server.ts', running: 'paygate API listening' },
    { entry: 'worker.ts', running: 'worker running' },
  ])(
    '$entry: its database process killed with SIGKILL, it says so in one line, its sandbox PGs end, and it exits 1',
    async ({ entry, running }) => {
      const { child, output } = spawnInGroup(['--import', 'tsx', entry], {
        DATA_DIR: await tempDir(),
        PORT: String(await freePort()),
        HOST: '127.0.0.1',
        TEMPORAL_ADDRESS: temporalAddress,
        PAYGATE_SANDBOX: 'true',
        ADMIN_TOKEN: 'helper-processes-admin-token-0123456789',
        LOG_LEVEL: 'info',
        LOG_FORMAT: 'json',
      });
      // 'close': its exit code once its output (and its helpers', which share the pipe) has all been read
      const code = new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
      await until(
        async () => {
          if (child.exitCode !== null) throw new Error(`${entry} exited (${child.exitCode}):\n${output().slice(-3000)}`);
          return output().includes(running);
        },
        `${entry} to run`,
        180_000,
      );
      const children = await childrenOf(child.pid!);
      const database = children.find((c) => /pglite-process-main/.test(c.cmdline))?.pid;
      const sandbox = children.find((c) => /sandbox\/child-main/.test(c.cmdline))?.pid;
      expect(database && sandbox, JSON.stringify(children)).toBeTruthy();

      process.kill(database!, 'SIGKILL');
      // the shutdown is bounded by 10 s (src/platform/child-process.ts), then exit 1 all the same
      const exited = await Promise.race([
        code,
        new Promise<'still running'>((r) => setTimeout(() => r('still running'), 45_000)),
      ]);
      const said = output().match(/"msg":"a paygate process ended: shutting down"/g)?.length ?? 0;
      expect({ exited, said }, output().slice(-3000)).toEqual({ exited: 1, said: 1 });
      expect(output()).toMatch(/"process":"database","how":"killed by SIGKILL"/);
      await until(async () => !(await alive(sandbox!)), 'the sandbox PGs to exit', 20_000);
    },
    240_000,
  );
});
