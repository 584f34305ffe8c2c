// kill -9 of A's worker in the middle of a relayed charge: A (the relay: its API in this process, its standalone worker
// as a child process on a Postgres schema of its own, the embedded engine) in front of B (another paygate, sandbox
// mode). B's PG executes the period's charge and holds its answer; A's worker is killed right then, and a new
// worker's retry of the charge activity sends the same charge to B under the same Idempotency-Key: B re-drives its
// own pending charge, its PG replays the first result. 0 duplicated at B, 0 lost at A.
// Needs Postgres (DATABASE_URL, or the machine's server at 127.0.0.1:5432): PGlite cannot be shared by two processes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeIdempotencyKey } from '../../src/payments/billing-rules.js';
import { createGatewayRegistry } from '../../src/gateways/index.js';
import type { Database } from '../../src/platform/db/db.js';
import { type SandboxGateways, startSandboxGateways } from '../../src/sandbox/server.js';
import { buildTestApp, openTestPGlite, TEST_SANDBOX_TOKEN, type TestApp } from '../helpers/app.js';
import { openWorkerProcessStack, postgresReachable, type WorkerProcessStack } from '../helpers/worker-process.js';
import { armSandboxFault, keyInClient, sandboxChargeExecutions } from '../payments/key-in-fixtures.js';
import { eventually } from '../webhooks/fixtures.js';
import { routeToProvider } from './fixtures.js';

describe.skipIf(!(await postgresReachable()))("the relay's worker killed -9 during a relayed charge (Postgres)", () => {
  let stack: WorkerProcessStack;
  let sandbox: SandboxGateways;
  let a: TestApp;
  let b: TestApp;
  let bUrl: string;
  let bDatabase: Database;
  const startWorker = () => stack.startWorker({ SANDBOX_GATEWAY_URL: sandbox.url, SANDBOX_TOKEN: TEST_SANDBOX_TOKEN });

  beforeAll(async () => {
    // B is another system: a database of its own (in memory), not the stack's
    bDatabase = await openTestPGlite();
    b = await buildTestApp({ database: bDatabase });
    bUrl = await b.app.listen({ host: '127.0.0.1', port: 0 });
    stack = await openWorkerProcessStack('upstream-kill9');
    const { database, keyring, client, taskQueue } = stack;
    sandbox = await startSandboxGateways({ host: '127.0.0.1', port: 0, token: TEST_SANDBOX_TOKEN });
    const gateways = createGatewayRegistry({ sandboxUrl: sandbox.url, timeoutMs: 5_000, sandboxToken: TEST_SANDBOX_TOKEN });
    a = await buildTestApp({
      database,
      keyring,
      gateways,
      sandboxUrl: sandbox.url,
      sandboxToken: TEST_SANDBOX_TOKEN,
      temporal: { client, taskQueue },
    });
  }, 120_000);

  afterAll(async () => {
    await stack?.killWorkers();
    await a?.close();
    await b?.close();
    await bDatabase?.close();
    await sandbox?.close();
    await stack?.close();
  }, 60_000);

  it('the period is charged exactly once at B across the kill and the restart, and paid at A', async () => {
    const atB = await b.createProject();
    const atA = await a.createProject();
    await routeToProvider(a, atA, { baseUrl: bUrl, project: atB }, ['sandbox_card']);
    const api = keyInClient(a, atA);
    const key = await api.issuedKey();
    const first = await startWorker();
    // B's PG executes the next charge and holds its answer: A's charge activity is in flight when its worker dies
    await armSandboxFault(b.sandboxUrl, 'charge', 'timeout');
    const created = await api.post('/v2/subscribe/schedules', {
      billing_key: key,
      order_name: 'Plan',
      price: 6_600,
      interval: 'month',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.schedule_id as string;
    const atBKey = chargeIdempotencyKey(atB.applicationId, `${id}-1`);
    await eventually(
      async () => ((await sandboxChargeExecutions(b.sandboxUrl, atBKey)) === 1 ? true : undefined),
      "B's PG charge",
      60_000,
    );
    await first.kill9();
    expect(first.process.signalCode).toBe('SIGKILL');

    await startWorker();
    // the engine retries the killed activity once its 60 s start-to-close timeout has passed (wall time)
    const paid = await eventually(
      async () => {
        const list = (await api.get(`/v2/subscribe/schedules/${id}/charges`)).body.list as Record<string, unknown>[];
        return list[0]?.status === 'paid' ? list : undefined;
      },
      'the period to be paid after the restart',
      150_000,
    );
    expect(paid).toHaveLength(1);
    expect(await sandboxChargeExecutions(b.sandboxUrl, atBKey)).toBe(1);
    const atBReceipts = await b.deps.database.db
      .selectFrom('receipts')
      .select(['receipt_id', 'status'])
      .where('application_id', '=', atB.applicationId)
      .where('order_id', 'like', `${id}-%`)
      .execute();
    expect(atBReceipts).toEqual([{ receipt_id: paid[0]!.receipt_id, status: 1 }]);
    const atAReceipts = await a.deps.database.db
      .selectFrom('receipts')
      .select(['provider_receipt_id as receipt_id', 'status'])
      .where('application_id', '=', atA.applicationId)
      .where('order_id', 'like', `${id}-%`)
      .execute();
    expect(atAReceipts).toEqual([{ receipt_id: paid[0]!.receipt_id, status: 1 }]);
  }, 300_000);
});
