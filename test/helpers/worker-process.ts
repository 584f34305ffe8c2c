// The kill -9 tests' shared stack: the real standalone worker (worker.ts) as a child process against the embedded
// engine (time-skipping) and a Postgres schema of its own, so a test can kill it with SIGKILL mid-flight and start
// another. PGlite cannot be shared by two processes, so these tests need Postgres (DATABASE_URL, or the machine's
// server at 127.0.0.1:5432) and skip without it.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import pg from 'pg';
import { createKeyring, generateKeyringSpec, type Keyring, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { type Database, dropSchema, openDatabase } from '../../src/platform/db/db.js';
import { paygateClientOptions } from '../../src/platform/temporal/client.js';
import { bounded, DEVSERVER_PATH } from './temporal.js';

const WORKER_SCRIPT = fileURLToPath(new URL('../../worker.ts', import.meta.url));
export const POSTGRES_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export async function postgresReachable(url: string = POSTGRES_URL): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A worker process: its output kept for diagnostics, killed with SIGKILL. */
export class WorkerProcess {
  readonly output: string[] = [];
  private readonly exited: Promise<void>;
  constructor(readonly process: ChildProcess) {
    process.stdout?.on('data', (c: Buffer) => this.output.push(c.toString()));
    process.stderr?.on('data', (c: Buffer) => this.output.push(c.toString()));
    this.exited = new Promise((resolve) => process.once('exit', () => resolve()));
  }
  text(): string {
    return this.output.join('');
  }
  async kill9(): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGKILL');
    await bounded(this.exited, 10_000, 'the worker to exit after SIGKILL');
  }
}

export interface WorkerProcessStack {
  readonly schema: string;
  readonly keyring: Keyring;
  readonly taskQueue: string;
  readonly database: Database;
  readonly env: TestWorkflowEnvironment;
  /** a client on the stack's engine, with paygate's sealing data converter */
  readonly client: Client;
  /** Spawns worker.ts on the stack (extra environment merged over it) and waits until it says it is running. */
  startWorker(extraEnv?: Record<string, string>): Promise<WorkerProcess>;
  /** Kills every worker this stack started with SIGKILL. */
  killWorkers(): Promise<void>;
  /** Kills the workers, stops the engine, drops the schema and the data directory. */
  close(): Promise<void>;
}

async function until(check: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function openWorkerProcessStack(label: string): Promise<WorkerProcessStack> {
  const schema = `t_${label.replace(/\W/g, '_')}_${randomBytes(6).toString('hex')}`;
  const keyringSpec = generateKeyringSpec(label);
  const keyring = createKeyring(parseKeyringSpec(keyringSpec));
  const taskQueue = `paygate-${label}-${randomBytes(4).toString('hex')}`;
  const workers: WorkerProcess[] = [];
  const dataDir = await mkdtemp(join(tmpdir(), `paygate-${label}-`));
  const database = await openDatabase({ databaseUrl: POSTGRES_URL, schema, poolSize: 4 });
  const env = await bounded(
    TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: DEVSERVER_PATH } } }),
    60_000,
    'the time-skipping engine to start',
  );
  const client = new Client({
    connection: env.connection,
    namespace: env.namespace ?? 'default',
    ...paygateClientOptions(keyring),
  });

  const startWorker = async (extraEnv: Record<string, string> = {}): Promise<WorkerProcess> => {
    const options = encodeURIComponent(`-c search_path=${schema}`);
    const separator = POSTGRES_URL.includes('?') ? '&' : '?';
    const worker = new WorkerProcess(
      spawn(process.execPath, ['--import', 'tsx', WORKER_SCRIPT], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          PATH: process.env.PATH ?? '',
          TEMPORAL_ADDRESS: env.address,
          TEMPORAL_NAMESPACE: env.namespace ?? 'default',
          TEMPORAL_TASK_QUEUE: taskQueue,
          DATABASE_URL: `${POSTGRES_URL}${separator}options=${options}`,
          ENCRYPTION_KEYS: keyringSpec,
          PAYGATE_SANDBOX: 'true',
          DATA_DIR: dataDir,
          LOG_LEVEL: 'info',
          ...extraEnv,
        },
      }),
    );
    workers.push(worker);
    // worker.ts bundles paygate's workflows before it runs: a minute and more when the kill -9 suites start theirs
    // together with the first files of a run (CI's first wave)
    await until(() => /worker running/.test(worker.text()), 'the worker to run', 120_000).catch((err: Error) => {
      throw new Error(`${err.message}; worker output:\n${worker.text()}`);
    });
    return worker;
  };

  const killWorkers = async (): Promise<void> => {
    for (const w of workers) await w.kill9().catch(() => undefined);
  };

  const close = async (): Promise<void> => {
    await killWorkers();
    await bounded(env.teardown(), 15_000, 'the engine to stop').catch(() => undefined);
    await database.close();
    await dropSchema(POSTGRES_URL, schema).catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
  };

  return { schema, keyring, taskQueue, database, env, client, startWorker, killWorkers, close };
}
