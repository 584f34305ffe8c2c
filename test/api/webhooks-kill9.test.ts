// kill -9 of the worker mid attempt: the real standalone worker (worker.ts) runs as a child process against
// the embedded engine (time-skipping) and a Postgres schema of its own; the API (in this process) saves
// sandbox messages whose events are delivered to a receiver that holds every request open. The worker is
// killed with SIGKILL while all of them are in flight, a new one is started, and every event reaches the
// receiver — deduplicated by webhook-id, none lost — with each attempt recorded once.
// Needs Postgres (DATABASE_URL, or the machine's server at 127.0.0.1:5432): PGlite cannot be shared by two processes.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../src/security/keyring.js';
import { type Database, dropSchema, openDatabase } from '../../src/store/db.js';
import { paygateDataConverter } from '../../src/temporal/data-converter.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bounded, DEVSERVER_PATH } from '../helpers/temporal.js';
import { attemptRows, eventually, type Receiver, startReceiver, webhookClient } from './webhook-fixtures.js';

const WORKER_SCRIPT = fileURLToPath(new URL('../../worker.ts', import.meta.url));
const POSTGRES_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const MESSAGES = 4; // each gives two events (300 and 301): eight deliveries

async function postgresReachable(url: string): Promise<boolean> {
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

const reachable = await postgresReachable(POSTGRES_URL);

/** The worker process: its output kept for diagnostics, killed with SIGKILL. */
class WorkerProcess {
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

describe.skipIf(!reachable)('the worker killed -9 mid attempt and restarted (Postgres)', () => {
  const schema = `t_kill9_${randomBytes(6).toString('hex')}`;
  const keyringSpec = generateKeyringSpec('kill9');
  const keyring = createKeyring(parseKeyringSpec(keyringSpec));
  const taskQueue = `paygate-kill9-${randomBytes(4).toString('hex')}`;
  const workers: WorkerProcess[] = [];
  let dataDir: string;
  let database: Database;
  let env: TestWorkflowEnvironment;
  let t: TestApp;
  let receiver: Receiver;

  const startWorker = async (): Promise<WorkerProcess> => {
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
        },
      }),
    );
    workers.push(worker);
    await eventually(async () => (/worker running/.test(worker.text()) ? true : undefined), 'the worker to run', 60_000).catch(
      (err: Error) => {
        throw new Error(`${err.message}; worker output:\n${worker.text()}`);
      },
    );
    return worker;
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'paygate-kill9-'));
    database = await openDatabase({ databaseUrl: POSTGRES_URL, schema, poolSize: 4 });
    env = await bounded(
      TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: DEVSERVER_PATH } } }),
      60_000,
      'the time-skipping engine to start',
    );
    const client = new Client({
      connection: env.connection,
      namespace: env.namespace ?? 'default',
      dataConverter: paygateDataConverter(keyring),
    });
    t = await buildTestApp({ database, keyring, temporal: { client, taskQueue } });
    receiver = await startReceiver();
  }, 120_000);

  afterAll(async () => {
    for (const w of workers) await w.kill9().catch(() => undefined);
    await receiver?.close();
    await t?.close();
    await bounded(env?.teardown() ?? Promise.resolve(), 15_000, 'the engine to stop').catch(() => undefined);
    await database?.close();
    await dropSchema(POSTGRES_URL, schema).catch(() => undefined);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('every event arrives (deduplicated by webhook-id), each attempt recorded once, nothing lost', async () => {
    let killed = false;
    // every request is held open until the worker has been killed; afterwards all are answered 200
    receiver.answer(() => (killed ? { status: 200, body: 'ok' } : { status: 200, hang: true }));
    const project = await t.createProject();
    const api = webhookClient(t, project);
    expect((await api.put({ url: receiver.url, events: [300, 301] })).status).toBe(200);

    const first = await startWorker();
    const deliveryIds: string[] = [];
    for (let i = 0; i < MESSAGES; i++) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/sandbox/v1/messages',
        headers: { authorization: project.basicAuth },
        payload: { phone: '01012345678', template_code: 'KILL9', ref_id: `ref-${i}` },
      });
      expect(res.statusCode, res.body).toBe(200);
      for (const e of res.json().events as { delivery_id: string | null }[]) deliveryIds.push(e.delivery_id!);
    }
    expect(deliveryIds).toHaveLength(2 * MESSAGES);

    // all eight attempts are in flight: the receiver holds each request, the rows say 'doing'
    const seen = () => new Set(receiver.requests.map((r) => r.headers['webhook-id']));
    await eventually(
      async () => (seen().size === deliveryIds.length ? true : undefined),
      'every attempt to reach the receiver',
      60_000,
    );
    await first.kill9();
    killed = true;
    expect(first.process.signalCode).toBe('SIGKILL');
    const doing = await t.deps.database.db
      .selectFrom('webhook_deliveries')
      .select('status')
      .where('delivery_id', 'in', deliveryIds)
      .execute();
    expect(doing.map((r) => r.status)).toEqual(deliveryIds.map(() => 'doing'));

    await startWorker();
    // The engine retries the killed attempts once their 1-minute start-to-close timeout has passed. That is
    // wall time: activity tasks in flight hold the time-skipping clock still, as in Temporal's test server.
    await eventually(
      async () => {
        const rows = await t.deps.database.db
          .selectFrom('webhook_deliveries')
          .select('status')
          .where('delivery_id', 'in', deliveryIds)
          .execute();
        return rows.every((r) => r.status === 'done') ? true : undefined;
      },
      'every delivery to be done',
      150_000,
    );

    // the receiver, deduplicating by webhook-id, has every event exactly once, each with its own body
    expect([...seen()].sort()).toEqual([...deliveryIds].sort());
    const bodies = new Map(
      receiver.requests.map((r) => [r.headers['webhook-id'], JSON.parse(r.body) as Record<string, unknown>]),
    );
    expect(new Set([...bodies.values()].map((b) => `${b.receipt_id as string}:${b.event_code as number}`)).size).toBe(
      deliveryIds.length,
    );
    for (const id of deliveryIds) {
      const attempts = await attemptRows(t, id);
      // the killed attempt and its retry are the same attempt number: recorded once, with the 2xx
      expect(attempts.map((a) => [a.attempt, a.http_status])).toEqual([[1, 200]]);
      const row = await t.deps.database.db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('delivery_id', '=', id)
        .executeTakeFirstOrThrow();
      expect(row.retry_count).toBe(1);
      // a request that reached the receiver before the kill was sent again after it, never a third time
      expect(receiver.requests.filter((r) => r.headers['webhook-id'] === id).length).toBeLessThanOrEqual(2);
    }
  }, 300_000);
});
