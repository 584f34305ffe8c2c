// kill -9 of the worker during a period's charge: the real standalone worker (worker.ts) runs as a child process
// against the embedded engine (time-skipping) and a Postgres schema of its own, sharing the test's sandbox PG. The
// PG executes the period's charge and holds its answer; the worker is killed with SIGKILL right then, and a new
// worker's retry of the charge activity re-drives the same charge under the same order_id: exactly one PG
// execution, one receipt, one paid period, one SUBSCRIPTION_CHARGED webhook.
// Needs Postgres (DATABASE_URL, or the machine's server at 127.0.0.1:5432): PGlite cannot be shared by two processes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeIdempotencyKey } from '../../src/payments/billing-rules.js';
import { createGatewayRegistry } from '../../src/gateways/registry.js';
import { type SandboxGateways, startSandboxGateways } from '../../src/sandbox/server.js';
import { buildTestApp, TEST_SANDBOX_TOKEN, type TestApp } from '../helpers/app.js';
import { openWorkerProcessStack, postgresReachable, type WorkerProcessStack } from '../helpers/worker-process.js';
import { armSandboxFault, keyInClient, sandboxChargeExecutions } from '../payments/key-in-fixtures.js';
import { eventually, type Receiver, startReceiver } from '../webhooks/fixtures.js';

describe.skipIf(!(await postgresReachable()))('schedules: the worker killed -9 during a period charge (Postgres)', () => {
  let stack: WorkerProcessStack;
  let sandbox: SandboxGateways;
  let t: TestApp;
  let receiver: Receiver;
  const startWorker = () => stack.startWorker({ SANDBOX_GATEWAY_URL: sandbox.url, SANDBOX_TOKEN: TEST_SANDBOX_TOKEN });

  beforeAll(async () => {
    stack = await openWorkerProcessStack('schedules-kill9');
    const { database, keyring, client, taskQueue } = stack;
    sandbox = await startSandboxGateways({ host: '127.0.0.1', port: 0, token: TEST_SANDBOX_TOKEN });
    const gateways = createGatewayRegistry({ sandboxUrl: sandbox.url, timeoutMs: 5_000, sandboxToken: TEST_SANDBOX_TOKEN });
    t = await buildTestApp({
      database,
      keyring,
      gateways,
      sandboxUrl: sandbox.url,
      sandboxToken: TEST_SANDBOX_TOKEN,
      temporal: { client, taskQueue },
    });
    receiver = await startReceiver();
  }, 120_000);

  afterAll(async () => {
    await stack?.killWorkers();
    await receiver?.close();
    await t?.close();
    await sandbox?.close();
    await stack?.close();
  }, 60_000);

  it('the period is charged exactly once across the kill and the restart', async () => {
    const project = await t.createProject({ webhook_url: receiver.url });
    const api = keyInClient(t, project);
    const key = await api.issuedKey();
    const first = await startWorker();
    // the PG executes the next charge and holds its answer: the charge activity is in flight when the worker dies
    await armSandboxFault(sandbox.url, 'charge', 'timeout');
    const created = await api.post('/v2/subscribe/schedules', {
      billing_key: key,
      order_name: 'Plan',
      price: 5_500,
      interval: 'month',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.schedule_id as string;
    const pgKey = chargeIdempotencyKey(project.applicationId, `${id}-1`);
    await eventually(
      async () => ((await sandboxChargeExecutions(sandbox.url, pgKey)) === 1 ? true : undefined),
      'the PG charge',
      60_000,
    );
    await first.kill9();
    expect(first.process.signalCode).toBe('SIGKILL');
    const pending = await t.deps.database.db
      .selectFrom('schedule_charges')
      .select(['status', 'receipt_id'])
      .where('schedule_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(pending).toEqual({ status: 'retrying', receipt_id: null });

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
    expect(paid[0]).toMatchObject({ period: 1, order_id: `${id}-1`, attempts: 1 });
    expect(await sandboxChargeExecutions(sandbox.url, pgKey)).toBe(1);
    const receipts = await t.deps.database.db
      .selectFrom('receipts')
      .select(['receipt_id', 'status'])
      .where('application_id', '=', project.applicationId)
      .where('order_id', 'like', `${id}-%`)
      .execute();
    expect(receipts).toEqual([{ receipt_id: paid[0]!.receipt_id, status: 1 }]);
    expect((await api.get(`/v2/subscribe/schedules/${id}`)).body).toMatchObject({ status: 'active', charges_made: 1 });
    const charged = await eventually(
      async () => {
        const ids = new Set(
          receiver.requests
            .filter((r) => JSON.parse(r.body).webhook_type === 'SUBSCRIPTION_CHARGED')
            .map((r) => r.headers['webhook-id']),
        );
        return ids.size >= 1 ? ids : undefined;
      },
      'the CHARGED webhook',
      60_000,
    );
    expect(charged.size).toBe(1);
  }, 300_000);
});
