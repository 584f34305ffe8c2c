// kill -9 of the worker between a PG notification and its webhook: the real standalone worker (worker.ts) runs
// as a child process against the embedded engine (time-skipping) and a Postgres schema of its own, sharing the
// test's sandbox PGs; the API (in this process) listens on loopback so the sandbox PGs' notifications reach it.
// The buyer's rejection moves the order to -2 and its ESCROW_STATUS_CHANGED attempt is held open by the receiver;
// the worker is killed with SIGKILL right then, the rejection approval is notified while no worker runs, and a
// new worker finishes everything: the order ends in -3 with the payment refunded, and the receiver,
// deduplicating by webhook-id, has exactly one webhook per change (3, -2, -3).
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
import { escrowWorkflowId } from '../../src/contracts/escrow.js';
import { createGatewayRegistry } from '../../src/gateways/registry.js';
import { startSandboxGateways, type SandboxGateways } from '../../src/sandbox/server.js';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../src/security/keyring.js';
import { type Database, dropSchema, openDatabase } from '../../src/store/db.js';
import { paygateDataConverter } from '../../src/temporal/data-converter.js';
import { buildTestApp, TEST_SANDBOX_TOKEN, type TestApp } from '../helpers/app.js';
import { bounded, DEVSERVER_PATH, eventTypeNames } from '../helpers/temporal.js';
import { createEscrowProject, escrowClient, freePort } from './escrow-fixtures.js';
import { attemptRows, eventually, type Receiver, startReceiver } from './webhook-fixtures.js';

const WORKER_SCRIPT = fileURLToPath(new URL('../../worker.ts', import.meta.url));
const POSTGRES_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

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

interface EscrowHookBody {
  receipt_id: string;
  status: number;
  cancelled_price: number;
  escrow_data: { status: number };
}

describe.skipIf(!reachable)('escrow: the worker killed -9 between a notification and its webhook (Postgres)', () => {
  const schema = `t_escrow_kill9_${randomBytes(6).toString('hex')}`;
  const keyringSpec = generateKeyringSpec('escrow-kill9');
  const keyring = createKeyring(parseKeyringSpec(keyringSpec));
  const taskQueue = `paygate-escrow-kill9-${randomBytes(4).toString('hex')}`;
  const workers: WorkerProcess[] = [];
  let dataDir: string;
  let database: Database;
  let env: TestWorkflowEnvironment;
  let client: Client;
  let sandbox: SandboxGateways;
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
          // the test's sandbox PGs: they hold the escrow orders the API's payments made
          SANDBOX_GATEWAY_URL: sandbox.url,
          SANDBOX_TOKEN: TEST_SANDBOX_TOKEN,
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
    dataDir = await mkdtemp(join(tmpdir(), 'paygate-escrow-kill9-'));
    database = await openDatabase({ databaseUrl: POSTGRES_URL, schema, poolSize: 4 });
    env = await bounded(
      TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: DEVSERVER_PATH } } }),
      60_000,
      'the time-skipping engine to start',
    );
    client = new Client({
      connection: env.connection,
      namespace: env.namespace ?? 'default',
      dataConverter: paygateDataConverter(keyring),
    });
    sandbox = await startSandboxGateways({ host: '127.0.0.1', port: 0, token: TEST_SANDBOX_TOKEN });
    const gateways = createGatewayRegistry({ sandboxUrl: sandbox.url, timeoutMs: 5_000, sandboxToken: TEST_SANDBOX_TOKEN });
    const port = await freePort();
    t = await buildTestApp({
      database,
      keyring,
      gateways,
      sandboxUrl: sandbox.url,
      sandboxToken: TEST_SANDBOX_TOKEN,
      temporal: { client, taskQueue },
      env: { PORT: String(port) },
    });
    await t.app.listen({ host: '127.0.0.1', port });
    receiver = await startReceiver();
  }, 120_000);

  afterAll(async () => {
    for (const w of workers) await w.kill9().catch(() => undefined);
    await receiver?.close();
    await t?.close();
    await sandbox?.close();
    await bounded(env?.teardown() ?? Promise.resolve(), 15_000, 'the engine to stop').catch(() => undefined);
    await database?.close();
    await dropSchema(POSTGRES_URL, schema).catch(() => undefined);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('the order reaches -3 with its refund, and exactly one webhook per change arrives', async () => {
    let killed = false;
    const hookBody = (body: string) => JSON.parse(body) as EscrowHookBody;
    // the webhook of the rejection (-2) is held open until the worker has been killed; every other one is answered
    receiver.answer((_n, req) =>
      !killed && hookBody(req.body).escrow_data.status === -2 ? { status: 200, hang: true } : { status: 200, body: 'ok' },
    );
    const project = await createEscrowProject(t, { webhook_url: receiver.url, api_version: '2.5' });
    const api = escrowClient(t, project);
    const escrowStatus = async (receiptId: string) =>
      ((await api.receipt(receiptId)).body.escrow_data as { status: number }).status;

    const first = await startWorker();
    const paid = await api.pay({ pg: 'sandbox_escrow_b', escrow: true, price: 27_000 });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    const order = paid.body.receipt_id as string;
    const shipped = await api.ship(order, { tracking_number: 'K9-1', delivery_corp: 'CJ대한통운' });
    expect(shipped.status, JSON.stringify(shipped.body)).toBe(200);

    // the PG notifies the rejection; the worker records it and its webhook attempt reaches the receiver, held open
    expect((await api.buyer(order, { event: 'purchase_rejected' })).status).toBe(202);
    await eventually(
      async () => (receiver.requests.some((r) => hookBody(r.body).escrow_data.status === -2) ? true : undefined),
      'the rejection webhook to reach the receiver',
      60_000,
    );
    await first.kill9();
    killed = true;
    expect(first.process.signalCode).toBe('SIGKILL');
    const heldId = receiver.requests.find((r) => hookBody(r.body).escrow_data.status === -2)!.headers['webhook-id']!;
    const held = await t.deps.database.db
      .selectFrom('webhook_deliveries')
      .select('status')
      .where('delivery_id', '=', heldId)
      .executeTakeFirstOrThrow();
    expect(held.status).toBe('doing');

    // the approval is notified while no worker runs: the engine keeps the signal, nothing moves yet
    expect((await api.buyer(order, { event: 'rejection_approved' })).status).toBe(202);
    const signals = async () =>
      eventTypeNames((await client.workflow.getHandle(escrowWorkflowId(order)).fetchHistory()).events ?? []).filter(
        (name) => name === 'WORKFLOW_EXECUTION_SIGNALED',
      ).length;
    await eventually(async () => ((await signals()) === 2 ? true : undefined), 'the approval to reach the engine');
    expect(await escrowStatus(order)).toBe(-2);

    await startWorker();
    // The engine retries the killed attempt once its 1-minute start-to-close timeout has passed: wall time,
    // as activity tasks in flight hold the time-skipping clock still.
    const transitions = await eventually(
      async () => {
        const list = (await api.events(order)).body.list as { to_status?: number; delivery_id?: string }[];
        const applied = list.filter((e) => e.to_status !== undefined);
        if (applied.length !== 3 || applied.some((e) => e.delivery_id === undefined)) return undefined;
        const rows = await t.deps.database.db
          .selectFrom('webhook_deliveries')
          .select('status')
          .where(
            'delivery_id',
            'in',
            applied.map((e) => e.delivery_id!),
          )
          .execute();
        return rows.length === 3 && rows.every((r) => r.status === 'done') ? applied : undefined;
      },
      'every change recorded and delivered',
      150_000,
    );
    expect(transitions.map((e) => e.to_status)).toEqual([3, -2, -3]);
    expect((await api.receipt(order)).body).toMatchObject({ status: 20, cancelled_price: 27_000, escrow_data: { status: -3 } });

    // the receiver, deduplicating by webhook-id, has one webhook per change, each its own
    const byId = new Map(receiver.requests.map((r) => [r.headers['webhook-id']!, hookBody(r.body)]));
    expect([...byId.keys()].sort()).toEqual(transitions.map((e) => e.delivery_id!).sort());
    expect([...byId.values()].map((b) => b.escrow_data.status).sort((a, b) => a - b)).toEqual([-3, -2, 3]);
    expect(byId.get(heldId)!.escrow_data.status).toBe(-2);
    // the held request was sent again after the kill, under the same id, never a third time
    expect(receiver.requests.filter((r) => r.headers['webhook-id'] === heldId)).toHaveLength(2);
    for (const e of transitions) {
      expect((await attemptRows(t, e.delivery_id!)).map((a) => [a.attempt, a.http_status])).toEqual([[1, 200]]);
    }
    // one refund reached the PG, whatever the restart replayed
    const receiptRow = await t.deps.database.db
      .selectFrom('receipts')
      .select('gateway_tid')
      .where('receipt_id', '=', order)
      .executeTakeFirstOrThrow();
    const charge = await fetch(new URL(`/_sandbox/charges/${receiptRow.gateway_tid!}`, sandbox.url), {
      headers: { authorization: `Bearer ${TEST_SANDBOX_TOKEN}` },
    });
    expect(await charge.json()).toMatchObject({ cancelled_amount: 27_000, cancel_count: 1 });
  }, 300_000);
});
