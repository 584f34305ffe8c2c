/**
 * Scale benchmark (issue 28, item 5): the split deployment as production runs it — one engine
 * (bin/temporal-devserver), one sandbox PG process (src/sandbox/main.ts), and N API processes (src/api/server.ts)
 * with N workers (worker.ts) on one Postgres (a schema of the run's own, dropped at the end) — started by
 * chaos/stack.ts. For each N the same merchant flows (a billing-key charge; the verification's five calls) run on
 * the same project and billing key, the callers spread round-robin over the API processes. Prints throughput,
 * p50/p99 and the CPU each kind of process spent per flow, a table of every N side by side, then proves nothing was
 * charged twice: every order has exactly one paid receipt in paygate's database and the sandbox PG executed each
 * order's charge exactly once (its own record, asked by the charge's PG idempotency key), and every verification
 * ended verified. Before the load it runs one flow of each kind (charge, verification, escrow shipping start, webhook
 * test until delivered) on the fresh engine and prints what each added to the engine's histories: workflow starts,
 * workflow tasks, activities, local activities, timers, updates and signals (the Temporal actions a cluster bills).
 * For the first N it also runs each flow with one caller on the first API and prints that API's event-loop delay over
 * the run (bench/event-loop.ts): the tails of an API process with the worker apart.
 *
 *   npm run bench:scale                                  # N = 1 then 2, 200 flows per measurement, 32 callers
 *   npm run bench:scale -- --processes 1,2,3 -n 500 --callers 48
 *   DATABASE_URL=postgres://user@host:5432/db npm run bench:scale   # default postgres://postgres@127.0.0.1:5432/test
 *
 * Prints figures; never a test (test/bench/scale-smoke.test.ts runs it with -n 3 to keep the harness working).
 * Postgres's own CPU is not counted: the server is shared and not a child of this run.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import pg from 'pg';
import { Pool } from 'undici';
import { Stack } from '../chaos/stack.js';
import { pgChargeKey } from '../src/payments/charges.js';
import { call, charge, expectOk, issueBillingKey, percentile, type Target, verification } from './paygate-calls.js';
import { cpuMs } from './proc-stats.js';
import { withLoopDelay } from './event-loop.js';

const { values } = parseArgs({
  options: {
    flows: { type: 'string', short: 'n' },
    callers: { type: 'string' },
    processes: { type: 'string' },
  },
});
const FLOWS = Number(values.flows ?? 200);
const CALLERS = Number(values.callers ?? 32);
const COUNTS = (values.processes ?? '1,2').split(',').map(Number);
if (!Number.isInteger(FLOWS) || FLOWS < 1) throw new Error('-n must be a positive integer');
if (!Number.isInteger(CALLERS) || CALLERS < 1) throw new Error('--callers must be a positive integer');
if (COUNTS.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--processes must list positive integers: 1,2');
const POSTGRES_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

type Flow = (target: Target) => Promise<void>;
const orderIds: string[] = [];
const verifications: string[] = [];
let billingKey = '';
const flows: Record<string, { flow: Flow; callers: number }> = {
  charge: {
    callers: CALLERS,
    flow: async (target) => {
      const orderId = `scale-${randomUUID()}`;
      orderIds.push(orderId); // before the call: an order whose call failed is checked all the same
      await charge(target, billingKey, orderId);
    },
  },
  // as bench:flows: fewer callers, each holds a window for five calls
  verification: { callers: Math.min(CALLERS, 16), flow: async (target) => void verifications.push(await verification(target)) },
};

const KINDS = ['api', 'worker', 'engine', 'sandbox'] as const;
type Kind = (typeof KINDS)[number];

interface Measured {
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  /** CPU ms per flow, per kind of process (the N APIs together, the N workers together) */
  readonly cpu: Record<Kind, number>;
}

const stack = await Stack.open({
  postgresUrl: POSTGRES_URL,
  label: 'bench_scale',
  // the bench's verifications pass the per-project send cap (1,000 an hour) on purpose
  extraEnv: { VERIFICATION_SEND_LIMITS_PER_PROJECT: 'none' },
});
process.on('exit', () => stack.killAll());
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    stack.killAll();
    void Promise.race([stack.close(), new Promise((r) => setTimeout(r, 5_000))]).finally(() => process.exit(130));
  });
}

const pools = new Map<number, Pool>();
const pidsOf = (kind: Kind, n: number): (number | undefined)[] =>
  kind === 'api' || kind === 'worker' ? Array.from({ length: n }, (_, i) => stack.pid(kind, i)) : [stack.pid(kind)];
const cpuOf = (kind: Kind, n: number) => pidsOf(kind, n).reduce<number>((sum, pid) => sum + cpuMs(pid), 0);

async function measure(flow: Flow, targets: Target[], count: number, callers: number, n: number): Promise<Measured> {
  const latencies: number[] = [];
  const before = Object.fromEntries(KINDS.map((k) => [k, cpuOf(k, n)])) as Record<Kind, number>;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(callers, count) }, async (_, caller) => {
      const target = targets[caller % targets.length]!; // round-robin: caller i stays on API i mod N
      while (next < count) {
        next++;
        const t0 = performance.now();
        await flow(target);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const cpu = Object.fromEntries(KINDS.map((k) => [k, (cpuOf(k, n) - before[k]) / count])) as Record<Kind, number>;
  return { perSecond: count / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), cpu };
}

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '-');

// ---- Temporal actions per flow: what one flow adds to every history in the namespace ---------------------------

const EventType = proto.temporal.api.enums.v1.EventType;
const ACTIONS = {
  'workflow starts': [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED],
  'workflow tasks': [EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED],
  activities: [EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED],
  'local activities': [], // markers named core_local_activity, counted below
  timers: [EventType.EVENT_TYPE_TIMER_STARTED],
  updates: [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED],
  signals: [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED],
  'history events': [],
} as const satisfies Record<string, readonly number[]>;
type Action = keyof typeof ACTIONS;

/** Every history's event counts by action, summed over the namespace's workflows. */
async function actionTotals(client: TemporalClient): Promise<Record<Action, number>> {
  const totals = Object.fromEntries(Object.keys(ACTIONS).map((a) => [a, 0])) as Record<Action, number>;
  for await (const execution of client.workflow.list()) {
    const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
    for (const event of history.events ?? []) {
      totals['history events']++;
      for (const [action, types] of Object.entries(ACTIONS) as [Action, readonly number[]][])
        if (types.includes(event.eventType as number)) totals[action]++;
      if (/local_activity/.test(event.markerRecordedEventAttributes?.markerName ?? '')) totals['local activities']++;
    }
  }
  return totals;
}

/** What `flow` added to the histories, once the engine has settled (two equal readings 500 ms apart). */
async function actionsOf(client: TemporalClient, flow: () => Promise<unknown>): Promise<Record<Action, number>> {
  const settled = async () => {
    let last = JSON.stringify(await actionTotals(client));
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 500));
      const now = JSON.stringify(await actionTotals(client));
      if (now === last) break;
      last = now;
    }
    return JSON.parse(last) as Record<Action, number>;
  };
  const before = await settled();
  await flow();
  const after = await settled();
  return Object.fromEntries(Object.keys(ACTIONS).map((a) => [a, after[a as Action] - before[a as Action]])) as Record<
    Action,
    number
  >;
}

/** One flow of each kind on a quiet engine, and what each added to its histories. */
async function printActionsPerFlow(target: Target): Promise<void> {
  const arrived = new Set<string>();
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrived.add(String(req.headers['webhook-id'] ?? ''));
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const connection = await Connection.connect({ address: stack.engineAddress });
  try {
    const client = new TemporalClient({ connection, namespace: 'default' });
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    expectOk(await call(target, 'PUT', '/message/alimtalk/webhook', { url }), 'webhook config');
    const escrowPayment = async () =>
      expectOk(
        await call(
          target,
          'POST',
          '/sandbox/v1/payments',
          { pg: 'sandbox_escrow_b', price: 10_000, order_id: `scale-${randomUUID()}`, order_name: 'bench', escrow: true },
          { 'idempotency-key': randomUUID() },
        ),
        'escrow payment',
      ).receipt_id as string;
    const receiptToShip = await escrowPayment();
    const rows: [string, Record<Action, number>][] = [
      ['charge', await actionsOf(client, () => charge(target, billingKey, `scale-actions-${randomUUID()}`))],
      ['verification (five calls)', await actionsOf(client, () => verification(target))],
      [
        'escrow shipping start',
        await actionsOf(client, async () =>
          expectOk(
            await call(target, 'PUT', `/v2/escrow/shipping/start/${receiptToShip}`, {
              tracking_number: `T${randomBytes(5).toString('hex')}`,
              delivery_corp: 'CJ대한통운',
            }),
            'shipping start',
          ),
        ),
      ],
      [
        'webhook test until delivered',
        await actionsOf(client, async () => {
          const sent = expectOk(await call(target, 'POST', '/message/alimtalk/webhook/test'), 'webhook test');
          for (let i = 0; i < 600 && !arrived.has(sent.delivery_id as string); i++) await new Promise((r) => setTimeout(r, 100));
          if (!arrived.has(sent.delivery_id as string)) throw new Error('the test webhook did not arrive within 60 s');
        }),
      ],
    ];
    console.log('Temporal actions per flow (one flow of each on a quiet engine, from its histories):');
    console.log(`| flow | ${Object.keys(ACTIONS).join(' | ')} |`);
    console.log(
      `|---|${Object.keys(ACTIONS)
        .map(() => '---|')
        .join('')}`,
    );
    for (const [name, counts] of rows) console.log(`| ${name} | ${Object.values(counts).join(' | ')} |`);
    console.log('');
  } finally {
    await connection.close();
    await new Promise((resolve) => receiver.close(resolve));
  }
}

try {
  await stack.start('engine');
  await stack.start('sandbox');
  let running = 0;
  let applicationId = '';
  let auth = '';
  const results = new Map<number, Record<string, Measured>>();
  const oneCaller: string[] = [];
  console.log(
    `bench:scale  ${FLOWS} flows per measurement, ${CALLERS} callers (verification ${flows.verification!.callers}), ` +
      `N = ${COUNTS.join(', ')} API + worker processes on Postgres (schema ${stack.schema}), one engine, one sandbox`,
  );
  for (const n of COUNTS) {
    // the APIs and workers of this N: more started, or the extra ones stopped
    for (let i = running; i < n; i++) {
      await stack.start('api', i);
      await stack.start('worker', i);
      pools.set(i, new Pool(stack.apiUrlOf(i), { connections: 64 }));
    }
    for (let i = n; i < running; i++) {
      await stack.kill9('api', i);
      await stack.kill9('worker', i);
    }
    running = n;
    if (!auth) {
      // one project and billing key for every N
      const admin: Target = { pool: pools.get(0)!, auth: `Bearer ${stack.adminToken}` };
      const project = expectOk(await call(admin, 'POST', '/admin/v1/projects', { name: 'bench-scale' }), 'project');
      applicationId = project.application_id as string;
      auth = `Basic ${Buffer.from(`${project.client_key as string}:${project.secret_key as string}`).toString('base64')}`;
      billingKey = await issueBillingKey({ pool: pools.get(0)!, auth });
      await printActionsPerFlow({ pool: pools.get(0)!, auth });
    }
    const targets = Array.from({ length: n }, (_, i) => ({ pool: pools.get(i)!, auth }));
    const measured: Record<string, Measured> = {};
    for (const [name, { flow, callers }] of Object.entries(flows)) {
      // warm-up, 50 flows per API (the measured -n at most): a process started for this N has compiled its hot
      // paths (V8 optimises a function after many calls) before its CPU is counted
      await measure(flow, targets, Math.min(50 * n, FLOWS), Math.min(callers, 4 * n), n);
      const m = await measure(flow, targets, FLOWS, callers, n);
      measured[name] = m;
      console.log(
        `N=${n} ${name}: ${fmt(m.perSecond, 1)} /s, p50 ${fmt(m.p50, 1)} ms, p99 ${fmt(m.p99, 1)} ms; CPU ms/flow ` +
          KINDS.map((k) => `${k}${k === 'api' || k === 'worker' ? ` (${n})` : ''} ${fmt(m.cpu[k], 1)}`).join(', '),
      );
      if (n === COUNTS[0]) {
        // one caller on the first API, with that API's event-loop delay over the run: the tails of an API process
        // without the worker in it (bench:flows measures them with the worker in the process, as npm start runs)
        const admin: Target = { pool: pools.get(0)!, auth: `Bearer ${stack.adminToken}` };
        const one = await withLoopDelay(admin, () => measure(flow, targets.slice(0, 1), Math.min(FLOWS, 200), 1, n));
        oneCaller.push(
          `| ${name} | ${fmt(one.result.p50, 1)} / ${fmt(one.result.p99, 1)} ms | ${fmt(one.delay.p50Ms, 1)} ms | ` +
            `${fmt(one.delay.p99Ms, 1)} ms | ${fmt(one.delay.maxMs, 1)} ms |`,
        );
      }
    }
    results.set(n, measured);
  }

  console.log('');
  console.log(
    `One caller on API 0 of N=${COUNTS[0]} (the worker in a process of its own), and that API's event-loop delay ` +
      '(monitorEventLoopDelay, 10 ms resolution):',
  );
  console.log('| flow | p50 / p99, 1 caller | loop delay p50 | loop delay p99 | loop delay max |');
  console.log('|---|---|---|---|---|');
  for (const line of oneCaller) console.log(line);
  console.log('');
  console.log('| flow | N | flows/s | p50 / p99 ms | CPU ms/flow: APIs | workers | engine | sandbox | total |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const name of Object.keys(flows)) {
    for (const n of COUNTS) {
      const m = results.get(n)![name]!;
      const total = KINDS.reduce((sum, k) => sum + m.cpu[k], 0);
      console.log(
        `| ${name} | ${n} | ${fmt(m.perSecond, 1)} | ${fmt(m.p50, 1)} / ${fmt(m.p99, 1)} | ` +
          `${KINDS.map((k) => fmt(m.cpu[k], 1)).join(' | ')} | ${fmt(total, 1)} |`,
      );
    }
  }
  const first = COUNTS[0]!;
  console.log('');
  console.log(
    `| flow | ${COUNTS.map((n) => `N=${n} flows/s`).join(' | ')} | ${COUNTS.slice(1)
      .map((n) => `N=${n} / N=${first}`)
      .join(' | ')} |`,
  );
  console.log(
    `|---|${COUNTS.map(() => '---|').join('')}${COUNTS.slice(1)
      .map(() => '---|')
      .join('')}`,
  );
  for (const name of Object.keys(flows)) {
    const rate = (n: number) => results.get(n)![name]!.perSecond;
    console.log(
      `| ${name} | ${COUNTS.map((n) => fmt(rate(n), 1)).join(' | ')} | ${COUNTS.slice(1)
        .map((n) => fmt(rate(n) / rate(first), 2))
        .join(' | ')} |`,
    );
  }

  // ---- nothing charged twice: paygate's receipts against the sandbox PG's own record of each charge key
  const problems: string[] = [];
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  await db.connect();
  const sandbox = new Pool(stack.sandboxUrl, { connections: 8 });
  try {
    const receipts = (
      await db.query<{ order_id: string; status: number; gateway_tid: string | null; pg_key_attempt: number }>(
        `select order_id, status, gateway_tid, pg_key_attempt from receipts where application_id = $1 and order_id = any($2)`,
        [applicationId, orderIds],
      )
    ).rows;
    const byOrder = new Map<string, typeof receipts>();
    for (const r of receipts) byOrder.set(r.order_id, [...(byOrder.get(r.order_id) ?? []), r]);
    let executions = 0;
    const queue = [...orderIds];
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let orderId = queue.pop(); orderId !== undefined; orderId = queue.pop()) {
          const rows = byOrder.get(orderId) ?? [];
          const receipt = rows[0];
          if (rows.length !== 1 || !receipt || receipt.status <= 0) {
            problems.push(`order ${orderId}: ${rows.length} receipts, status ${rows.map((r) => r.status).join(',') || '-'}`);
          }
          let charged = 0;
          let tid: string | null = null;
          for (let attempt = 0; attempt <= (receipt?.pg_key_attempt ?? 0); attempt++) {
            const res = await sandbox.request({
              method: 'GET',
              path: `/_sandbox/charges?idempotency_key=${encodeURIComponent(pgChargeKey(applicationId, orderId, attempt))}`,
              headers: { authorization: `Bearer ${stack.sandboxToken}` },
            });
            const body = (await res.body.json()) as { executions?: number; tid?: string | null };
            if (res.statusCode !== 200) throw new Error(`the sandbox's charge lookup answered ${res.statusCode}`);
            charged += body.executions ?? 0;
            if (body.executions) tid = body.tid ?? null;
          }
          executions += charged;
          if (charged !== 1) problems.push(`order ${orderId}: the sandbox PG charged it ${charged} times`);
          else if (receipt && receipt.gateway_tid !== tid)
            problems.push(`order ${orderId}: receipt tid ${receipt.gateway_tid}, the PG's ${tid}`);
        }
      }),
    );
    const verified = Number(
      (
        await db.query<{ n: string }>('select count(*) n from verifications where receipt_id = any($1) and status = 12', [
          verifications,
        ])
      ).rows[0]!.n,
    );
    if (verified !== verifications.length)
      problems.push(`${verifications.length - verified} of ${verifications.length} confirmed verifications are not verified`);
    console.log('');
    console.log(
      `charges: ${orderIds.length} orders, ${receipts.length} receipts, ${executions} PG charge executions; ` +
        `verifications: ${verifications.length} confirmed, ${verified} verified`,
    );
  } finally {
    await db.end();
    await sandbox.close();
  }
  for (const problem of problems.slice(0, 20)) console.log(`  ${problem}`);
  if (problems.length > 0) throw new Error(`${problems.length} orders or verifications are wrong (above)`);
  console.log('nothing charged twice: every order has one paid receipt and one PG charge');
} finally {
  for (const pool of pools.values()) await pool.close().catch(() => undefined);
  await stack.close();
}
