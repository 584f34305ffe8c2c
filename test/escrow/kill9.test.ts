// kill -9 of the worker between a PG notification and its webhook: the real standalone worker (worker.ts) runs
// as a child process against the embedded engine (time-skipping) and a Postgres schema of its own, sharing the
// test's sandbox PGs; the API (in this process) listens on loopback so the sandbox PGs' notifications reach it.
// The buyer's rejection moves the order to -2 and its ESCROW_STATUS_CHANGED attempt is held open by the receiver;
// the worker is killed with SIGKILL right then, the rejection approval is notified while no worker runs, and a
// new worker finishes everything: the order ends in -3 with the payment refunded, and the receiver,
// deduplicating by webhook-id, has exactly one webhook per change (3, -2, -3).
// Needs Postgres (DATABASE_URL, or the machine's server at 127.0.0.1:5432): PGlite cannot be shared by two processes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escrowWorkflowId } from '../../src/escrow/contract.js';
import { createGatewayRegistry } from '../../src/gateways/registry.js';
import { type SandboxGateways, startSandboxGateways } from '../../src/sandbox/server.js';
import { buildTestApp, TEST_SANDBOX_TOKEN, type TestApp } from '../helpers/app.js';
import { eventTypeNames } from '../helpers/temporal.js';
import { openWorkerProcessStack, postgresReachable, type WorkerProcessStack } from '../helpers/worker-process.js';
import { createEscrowProject, escrowClient, freePort } from './fixtures.js';
import { attemptRows, eventually, type Receiver, startReceiver } from '../webhooks/fixtures.js';

interface EscrowHookBody {
  receipt_id: string;
  status: number;
  cancelled_price: number;
  escrow_data: { status: number };
}

describe.skipIf(!(await postgresReachable()))(
  'escrow: the worker killed -9 between a notification and its webhook (Postgres)',
  () => {
    let stack: WorkerProcessStack;
    let client: WorkerProcessStack['client'];
    let sandbox: SandboxGateways;
    let t: TestApp;
    let receiver: Receiver;
    // the test's sandbox PGs: they hold the escrow orders the API's payments made
    const startWorker = () => stack.startWorker({ SANDBOX_GATEWAY_URL: sandbox.url, SANDBOX_TOKEN: TEST_SANDBOX_TOKEN });

    beforeAll(async () => {
      stack = await openWorkerProcessStack('escrow-kill9');
      const { database, keyring, taskQueue } = stack;
      client = stack.client;
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
      await stack?.killWorkers();
      await receiver?.close();
      await t?.close();
      await sandbox?.close();
      await stack?.close();
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
  },
);
