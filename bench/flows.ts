/**
 * Flow benchmark (issue 14): paygate started as `npm start` starts it (src/main.ts: API and worker in one process;
 * PGlite under a temporary DATA_DIR — or Postgres with DATABASE_URL —, the sandbox PGs and the embedded engine in
 * child processes) next to the no-orchestration baseline of bench/flows-baseline.ts in a separate process, driven in one run
 * with the same callers. For each flow it prints throughput, the ratio to the baseline, p50/p99 latency with one
 * caller and with many, and the CPU each process spent per flow (from /proc). For the flows that drive workflows
 * (verification, shipping) it also measures their Temporal floor (bench/flows-floor.ts: the same Temporal actions
 * through the same SDK, codec and engine, with no paygate code) and prints paygate's CPU and latency over it.
 *
 *   npm run bench:flows                          # 200 flows per measurement, 32 callers (16 for verification)
 *   npm run bench:flows -- -n 500 --callers 32
 *   npm run bench:flows -- --only charge,verification
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:flows   # paygate on Postgres (own schema)
 *   npm run bench:flows -- --only verification --profile /tmp/prof   # a CPU profile of the API+worker process
 *
 * Prints figures; never a test (test/bench/flows-smoke.test.ts runs it with -n 3 to keep the harness working).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Pool } from 'undici';
import { freePort, startProcess } from '../tools/child-processes.js';
import { call, charge, expectOk, issueBillingKey, percentile, randomPhone, type Target, verification } from './paygate-calls.js';
import { FLOOR_FLOWS, FLOOR_TABLE_HEADER, floorRow, measureFloor, startFloor } from './flows-floor.js';
import { childOf, cpuMs, rssMb } from './proc-stats.js';
import { withLoopDelay } from './event-loop.js';

const { values } = parseArgs({
  options: {
    flows: { type: 'string', short: 'n' },
    callers: { type: 'string' },
    only: { type: 'string' },
    /** a directory for V8 CPU profiles of paygate's processes (node --cpu-prof), written when they stop */
    profile: { type: 'string' },
  },
});
const FLOWS = Number(values.flows ?? 200);
const CALLERS = Number(values.callers ?? 32);
if (!Number.isInteger(FLOWS) || FLOWS < 1) throw new Error('-n must be a positive integer');
if (!Number.isInteger(CALLERS) || CALLERS < 1) throw new Error('--callers must be a positive integer');
const ADMIN_TOKEN = `bench-admin-${randomBytes(12).toString('hex')}`;

// ---- the webhook receiver: resolves the waiter of each webhook-id ----------------------------------------------

const webhookWaiters = new Map<string, () => void>();
const earlyWebhooks = new Set<string>();
const receiver = createServer((req, res) => {
  const id = String(req.headers['webhook-id'] ?? '');
  req.resume();
  req.on('end', () => {
    res.writeHead(200).end('ok');
    const waiter = webhookWaiters.get(id);
    if (waiter) waiter();
    else earlyWebhooks.add(id);
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

function webhookArrival(id: string): Promise<void> {
  if (earlyWebhooks.delete(id)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`webhook ${id} did not arrive within 60 s`)), 60_000);
    webhookWaiters.set(id, () => {
      clearTimeout(timer);
      webhookWaiters.delete(id);
      resolve();
    });
  });
}

// ---- flows -----------------------------------------------------------------------------------------------------

interface Side {
  readonly name: 'paygate' | 'baseline';
  readonly target: Target;
  /** processes whose CPU is counted: name -> pid */
  readonly processes: Record<string, number | undefined>;
  /** per-flow setup that is not measured (a receipt to cancel, an escrow payment to ship) */
  prepare?: Record<string, () => Promise<string>>;
}

type Flow = (side: Side, input: string) => Promise<void>;

const paygateFlows: Record<string, Flow> = {
  health: async (s) => void expectOk(await call(s.target, 'GET', '/health'), 'health'),
  charge: async (s) => void (await charge(s.target, billingKey, `bench-${randomUUID()}`)),
  receipt: async (s) => void expectOk(await call(s.target, 'GET', `/v2/receipt/${lookupReceipt}`), 'receipt'),
  cancel: async (s, receiptId) =>
    void expectOk(await call(s.target, 'POST', '/v2/cancel', { receipt_id: receiptId, cancel_price: 1000 }), 'cancel'),
  verification: async (s) => void (await verification(s.target)),
  shipping: async (s, receiptId) =>
    void expectOk(
      await call(s.target, 'PUT', `/v2/escrow/shipping/start/${receiptId}`, {
        tracking_number: `T${randomBytes(5).toString('hex')}`,
        delivery_corp: 'CJ대한통운',
      }),
      'shipping start',
    ),
  webhook: async (s) => {
    const sent = expectOk(await call(s.target, 'POST', '/message/alimtalk/webhook/test'), 'webhook test');
    await webhookArrival(sent.delivery_id as string);
  },
};

const baselineFlows: Record<string, Flow> = {
  health: async (s) => void expectOk(await call(s.target, 'GET', '/health'), 'health'),
  charge: async (s) => void expectOk(await call(s.target, 'POST', '/charge', { order_id: randomUUID(), price: 1000 }), 'charge'),
  receipt: async (s) => void expectOk(await call(s.target, 'GET', `/receipt/${baselineReceipt}`), 'receipt'),
  cancel: async (s, receiptId) =>
    void expectOk(await call(s.target, 'POST', '/cancel', { receipt_id: receiptId, cancel_price: 1000 }), 'cancel'),
  verification: async (s) => {
    const to = randomPhone();
    const requested = expectOk(await call(s.target, 'POST', '/auth/request', { phone: to }), 'request');
    const receiptId = requested.receipt_id as string;
    expectOk(await call(s.target, 'POST', '/auth/realarm', { receipt_id: receiptId }), 'resend');
    const inbox = expectOk(await call(s.target, 'GET', `/sms?phone=${to}`), 'inbox');
    const otp = (inbox.list as { otp: string }[])[0]!.otp;
    expectOk(await call(s.target, 'POST', '/auth/confirm', { receipt_id: receiptId, otp }), 'confirm');
    expectOk(await call(s.target, 'GET', `/auth/${receiptId}`), 'lookup');
  },
  shipping: async (s, receiptId) =>
    void expectOk(await call(s.target, 'PUT', `/ship/${receiptId}`, { tracking_number: 'T1' }), 'ship'),
  webhook: async (s) => void expectOk(await call(s.target, 'POST', '/webhook', { url: receiverUrl }), 'webhook'),
};

interface Measured {
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  /** CPU ms per flow, per process */
  readonly cpu: Record<string, number>;
}

async function measure(side: Side, name: string, flow: Flow, flows: number, callers: number): Promise<Measured> {
  const prepared: string[] = [];
  const prepare = side.prepare?.[name];
  if (prepare) for (let i = 0; i < flows; i++) prepared.push(await prepare());
  const latencies: number[] = [];
  const cpuBefore = Object.fromEntries(Object.entries(side.processes).map(([k, pid]) => [k, cpuMs(pid)]));
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(callers, flows) }, async () => {
      while (next < flows) {
        const i = next++;
        const t0 = performance.now();
        await flow(side, prepared[i] ?? '');
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const cpu = Object.fromEntries(Object.entries(side.processes).map(([k, pid]) => [k, (cpuMs(pid) - cpuBefore[k]!) / flows]));
  return { perSecond: flows / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), cpu };
}

// ---- setup -----------------------------------------------------------------------------------------------------

let billingKey = '';
let lookupReceipt = '';
let baselineReceipt = '';

const dataDir = await mkdtemp(join(tmpdir(), 'paygate-bench-flows-'));
const closers: (() => unknown)[] = [];
const schema = `bench_flows_${randomBytes(5).toString('hex')}`;
let databaseUrl = process.env.DATABASE_URL;
if (databaseUrl) {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  closers.push(async () => {
    const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await c.connect();
    await c.query(`drop schema if exists ${schema} cascade`);
    await c.end();
  });
  const separator = databaseUrl.includes('?') ? '&' : '?';
  databaseUrl = `${databaseUrl}${separator}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

async function shutdown(): Promise<void> {
  for (const close of closers.reverse()) await Promise.resolve(close()).catch(() => undefined);
  await new Promise((resolve) => receiver.close(resolve));
  await rm(dataDir, { recursive: true, force: true });
}

try {
  const port = await freePort();
  const paygate = await startProcess(
    'src/main.ts',
    [],
    {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: join(dataDir, 'paygate'),
      ADMIN_TOKEN,
      PAYGATE_SANDBOX: 'true',
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', // as `npm start` runs
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    },
    async () => {
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      await res.arrayBuffer();
      return res.status === 200;
    },
    // the API and worker process (the helpers it spawns are not profiled)
    values.profile ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${values.profile}`] } : {},
  );
  closers.push(async () => {
    // a profile is written at a clean exit: stop as Ctrl-C does, then make sure
    if (values.profile) {
      const exited = new Promise((resolve) => paygate.child.once('exit', resolve));
      paygate.child.kill('SIGINT');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 30_000))]);
    }
    paygate.child.kill('SIGKILL');
  });
  const base = await startProcess(
    'bench/flows-baseline.ts',
    [join(dataDir, 'baseline')],
    { PATH: process.env.PATH ?? '' },
    /listening \d+/,
  );
  closers.push(() => void base.child.kill('SIGKILL'));
  const basePort = Number(/listening (\d+)/.exec(base.output.join(''))![1]);

  const paygatePool = new Pool(`http://127.0.0.1:${port}`, { connections: 64 });
  const basePool = new Pool(`http://127.0.0.1:${basePort}`, { connections: 64 });
  closers.push(
    () => paygatePool.close(),
    () => basePool.close(),
  );

  // a project with every sandbox PG, its webhook, a billing key and a receipt to look up
  const adminTarget: Target = { pool: paygatePool, auth: `Bearer ${ADMIN_TOKEN}` };
  const project = expectOk(await call(adminTarget, 'POST', '/admin/v1/projects', { name: 'bench' }), 'project');
  const paygateTarget: Target = {
    pool: paygatePool,
    auth: `Basic ${Buffer.from(`${project.client_key as string}:${project.secret_key as string}`).toString('base64')}`,
  };
  billingKey = await issueBillingKey(paygateTarget);
  expectOk(await call(paygateTarget, 'PUT', '/message/alimtalk/webhook', { url: receiverUrl }), 'webhook config');

  const chargeOnPaygate = () => charge(paygateTarget, billingKey, `bench-${randomUUID()}`, 5000);
  lookupReceipt = await chargeOnPaygate();
  const baseTarget: Target = {
    pool: basePool,
    auth: `Basic ${Buffer.from('baseline-client:baseline-secret').toString('base64')}`,
  };
  const chargeOnBase = async () =>
    expectOk(await call(baseTarget, 'POST', '/charge', { order_id: randomUUID(), price: 5000 }), 'charge').receipt_id as string;
  baselineReceipt = await chargeOnBase();

  // npm start's processes: the API and the worker in the one started, the engine, the database (PGlite) and the
  // sandbox PGs beside it
  const enginePid = childOf(paygate.child.pid!, /temporal-devserver/);
  const databasePid = childOf(paygate.child.pid!, /pglite-process-main/);
  const sandboxPid = childOf(paygate.child.pid!, /sandbox\/child-main/);
  const helpers: Record<string, number | undefined> = {
    ...(databasePid ? { database: databasePid } : {}),
    ...(sandboxPid ? { sandbox: sandboxPid } : {}),
    engine: enginePid,
  };
  const sides: Side[] = [
    {
      name: 'paygate',
      target: paygateTarget,
      processes: { 'paygate (API+worker)': paygate.child.pid, ...helpers },
      prepare: {
        cancel: chargeOnPaygate,
        shipping: async () =>
          expectOk(
            await call(
              paygateTarget,
              'POST',
              '/sandbox/v1/payments',
              { pg: 'sandbox_escrow_b', price: 10_000, order_id: `bench-${randomUUID()}`, order_name: 'bench', escrow: true },
              { 'idempotency-key': randomUUID() },
            ),
            'escrow payment',
          ).receipt_id as string,
      },
    },
    {
      name: 'baseline',
      target: baseTarget,
      processes: { baseline: base.child.pid },
      prepare: { cancel: chargeOnBase, shipping: chargeOnBase },
    },
  ];

  const only = values.only?.split(',');
  const names = Object.keys(paygateFlows).filter((n) => !only || only.includes(n));
  // the Temporal floor's own process (and engine), when a flow that has one is measured
  const floor = names.some((n) => FLOOR_FLOWS.has(n)) ? await startFloor(join(dataDir, 'floor')) : undefined;
  if (floor) closers.push(() => floor.close());
  const rows: string[] = [];
  const floorRows: string[] = [];
  const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '-');
  console.log(
    `bench:flows  ${FLOWS} flows per measurement, ${CALLERS} callers (verification ${Math.min(CALLERS, 16)}), ` +
      `paygate on ${databaseUrl ? 'Postgres' : 'PGlite'}, engine pid ${enginePid ?? 'not found'}` +
      (floor ? `, Temporal floor pid ${floor.pid} (engine pid ${floor.enginePid})` : ''),
  );
  // item 3 of issue 14: every process's RSS idle and after each flow's measurements (run with -n 10000 for the
  // memory after 10,000 of a flow: nothing may grow without bound)
  const rssLine = (when: string) =>
    `RSS ${when}: paygate ${rssMb(paygate.child.pid)} MB, ` +
    Object.entries(helpers)
      .map(([name, pid]) => `${name} ${rssMb(pid)} MB, `)
      .join('') +
    `baseline ${rssMb(base.child.pid)} MB`;
  const rssLines = [rssLine('idle')];
  const loopLines: string[] = [];
  console.log(rssLines[0]);
  for (const name of names) {
    const callers = name === 'verification' ? Math.min(CALLERS, 16) : CALLERS;
    const results: Record<string, { one: Measured; many: Measured }> = {};
    for (const side of sides) {
      const flow = (side.name === 'paygate' ? paygateFlows : baselineFlows)[name]!;
      await measure(side, name, flow, Math.min(5, FLOWS), 1); // warm-up
      const oneCaller = () => measure(side, name, flow, Math.max(1, Math.floor(FLOWS / 4)), 1);
      // paygate's API loop over the one-caller run: what its p99 waits behind
      const one = side.name === 'paygate' ? await withLoopDelay(adminTarget, oneCaller) : { result: await oneCaller() };
      if ('delay' in one) {
        const d = one.delay;
        loopLines.push(
          `| ${name} | ${fmt(d.p50Ms, 1)} ms | ${fmt(d.p99Ms, 1)} ms | ${fmt(d.maxMs, 1)} ms | ${fmt(one.result.p99, 1)} ms |`,
        );
      }
      const many = await measure(side, name, flow, FLOWS, callers);
      results[side.name] = { one: one.result, many };
    }
    const p = results.paygate!;
    const b = results.baseline!;
    const cpu = (m: Measured) =>
      Object.entries(m.cpu)
        .map(([k, v]) => `${k} ${fmt(v, 1)}`)
        .join(', ');
    rows.push(
      `| ${name} | ${fmt(p.many.perSecond, 1)} /s | ${fmt(b.many.perSecond, 1)} /s | ${fmt(p.many.perSecond / b.many.perSecond, 2)} | ` +
        `${fmt(p.one.p50, 1)} / ${fmt(p.one.p99, 1)} ms | ${fmt(b.one.p50, 1)} / ${fmt(b.one.p99, 1)} ms | ` +
        `${fmt(p.many.p50, 1)} / ${fmt(p.many.p99, 1)} ms | ${cpu(p.many)} | ${cpu(b.many)} |`,
    );
    console.log(rows[rows.length - 1]);
    if (floor && FLOOR_FLOWS.has(name)) {
      floorRows.push(floorRow(name, await measureFloor(floor, name, FLOWS, callers), p));
      console.log(`floor: ${floorRows[floorRows.length - 1]}`);
    }
    // the one-caller and the many-caller measurements, plus the warm-up
    const measured = Math.min(5, FLOWS) + Math.max(1, Math.floor(FLOWS / 4)) + FLOWS;
    rssLines.push(rssLine(`after ${measured} ${name} flows`));
    console.log(rssLines[rssLines.length - 1]);
  }
  console.log('');
  console.log(
    '| flow | paygate | baseline | ratio | paygate p50/p99, 1 caller | baseline p50/p99, 1 caller | paygate p50/p99, many | paygate CPU ms/flow | baseline CPU ms/flow |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
  if (floorRows.length > 0) {
    console.log('');
    console.log("The Temporal floor (the same Temporal actions, no paygate code) and paygate's CPU over it:");
    for (const line of [...FLOOR_TABLE_HEADER, ...floorRows]) console.log(line);
  }
  console.log('');
  console.log("paygate's API event loop during the one-caller runs (monitorEventLoopDelay, 10 ms resolution):");
  console.log('| flow | loop delay p50 | loop delay p99 | loop delay max | one-caller p99 |');
  console.log('|---|---|---|---|---|');
  for (const line of loopLines) console.log(line);
  for (const line of rssLines) console.log(line);
  console.log(`measured ${names.length} flows on paygate and the baseline; none failed`);
  if (floorRows.length > 0)
    console.log(`measured the Temporal floor of ${floorRows.length} flow${floorRows.length === 1 ? '' : 's'}; none failed`);
} finally {
  await shutdown();
}
