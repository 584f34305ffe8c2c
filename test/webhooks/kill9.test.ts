// kill -9 of the worker mid attempt: the real standalone worker (worker.ts) runs as a child process against
// the embedded engine (time-skipping) and a Postgres schema of its own; the API (in this process, which runs no
// dispatcher, as a split API) saves sandbox messages whose events the worker's dispatcher finds at its poll and
// sends to a receiver that holds every request open. The worker is killed with SIGKILL while all of them are in
// flight, a new one is started, takes the claims over when their lease lapses, and every event reaches the
// receiver — deduplicated by webhook-id, none lost — with each attempt recorded once. Two workers run at the end,
// so the claim's SKIP LOCKED is what keeps a row from being sent by both.
// Needs Postgres (DATABASE_URL, or the machine's server at 127.0.0.1:5432): PGlite cannot be shared by two processes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { openWorkerProcessStack, postgresReachable, type WorkerProcessStack } from '../helpers/worker-process.js';
import { attemptRows, eventually, type Receiver, startReceiver, webhookClient } from './fixtures.js';

const MESSAGES = 4; // each gives two events (300 and 301): eight deliveries

describe.skipIf(!(await postgresReachable()))('the worker killed -9 mid attempt and restarted (Postgres)', () => {
  let stack: WorkerProcessStack;
  let t: TestApp;
  let receiver: Receiver;
  const startWorker = () => stack.startWorker();

  beforeAll(async () => {
    stack = await openWorkerProcessStack('kill9');
    const { database, keyring, client, taskQueue } = stack;
    t = await buildTestApp({ database, keyring, temporal: { client, taskQueue } });
    receiver = await startReceiver();
  }, 120_000);

  afterAll(async () => {
    await stack?.killWorkers();
    await receiver?.close();
    await t?.close();
    await stack?.close();
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

    const leases = await t.deps.database.db
      .selectFrom('webhook_deliveries')
      .select('claimed_until')
      .where('delivery_id', 'in', deliveryIds)
      .execute();
    expect(leases.every((r) => r.claimed_until !== null)).toBe(true);

    // two dispatchers now: each row is claimed by one of them once its dead claimer's lease (60 s, the database's
    // clock) has lapsed
    await startWorker();
    await startWorker();
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
      expect(row.claimed_until).toBeNull();
      // a request that reached the receiver before the kill was sent again after it, never a third time
      expect(receiver.requests.filter((r) => r.headers['webhook-id'] === id).length).toBeLessThanOrEqual(2);
    }
  }, 300_000);
});
