/**
 * Engine benchmark: N workflows, each running one activity and one timer, against bin/temporal-devserver
 * in time-skipping mode, in dev-server (real clock) mode in memory, and in dev-server mode with its journal
 * on disk (--db-filename, as `npm start` runs it). Prints workflows per second, p50/p99
 * start-to-completion latency, and the CPU each side spent per workflow.
 *
 * Two load drivers run the same workload:
 * - `sdk`: the real Temporal SDK — a @temporalio/worker Worker and a @temporalio/client Client in this
 *   process. This is what an application sees; on a small machine the SDK's own CPU bounds it.
 * - `protocol`: bench/protocol-driver.ts speaks WorkflowService directly (start, poll, the same commands,
 *   eager activity, result long-poll) over a lean HTTP/2 transport (bench/h2-connection.ts), without the
 *   SDK's workflow sandbox, so the figure is the server's capacity.
 *
 *   npm run bench:engine                                   # 1000 workflows, all modes, both drivers
 *   npm run bench:engine -- -n 1000 --modes time-skipping --drivers sdk --concurrency 200
 *   npm run bench:engine -- --threads                      # per-thread CPU of both processes (Linux)
 *   ENGINE_BENCH_WORKFLOWS=200 npm run bench:engine
 *   ENGINE_DEVSERVER_PATH=/path/to/launcher npm run bench:engine  # e.g. a launcher running node --cpu-prof
 *
 * Latency is measured from just before the start call to the result; throughput is completed workflows
 * divided by the time from the first start to the last completion. CPU figures come from /proc (Linux) and
 * cover the measured window only: "load" is this process (SDK worker + client, or the protocol driver),
 * "server" is the engine process.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { InternalConnectionOptionsSymbol } from '@temporalio/client/lib/connection.js';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Worker } from '@temporalio/worker';
import { DEVSERVER_PATH, eventually, uniqueId } from '../test/engine/env.js';
import { benchActivities } from './activities.js';
import { H2Connection } from './h2-connection.js';
import { runProtocolDriver } from './protocol-driver.js';
import { activityAndTimer } from './workflows.js';

type Driver = 'sdk' | 'protocol';
/** `dev-server-journal` is the dev server with --db-filename: every change fdatasync'd before it is answered. */
type Mode = 'time-skipping' | 'dev-server' | 'dev-server-journal';
const MODES: readonly Mode[] = ['time-skipping', 'dev-server', 'dev-server-journal'];

const { values } = parseArgs({
  options: {
    workflows: { type: 'string', short: 'n' },
    modes: { type: 'string' },
    drivers: { type: 'string' },
    concurrency: { type: 'string' },
    'timer-ms': { type: 'string' },
    threads: { type: 'boolean' },
  },
});

const workflowCount = Number(values.workflows ?? process.env.ENGINE_BENCH_WORKFLOWS ?? 1000);
const concurrency = Number(values.concurrency ?? workflowCount);
const timerMs = Number(values['timer-ms'] ?? 1_000);
const modes = (values.modes ?? MODES.join(',')).split(',').map((m) => m.trim()) as Mode[];
const drivers = (values.drivers ?? 'sdk,protocol').split(',').map((d) => d.trim()) as Driver[];
if (!Number.isInteger(workflowCount) || workflowCount <= 0) throw new Error('--workflows must be a positive integer');
if (!Number.isInteger(concurrency) || concurrency <= 0) throw new Error('--concurrency must be a positive integer');
for (const mode of modes) {
  if (!MODES.includes(mode)) throw new Error(`unknown mode ${mode} (modes: ${MODES.join(', ')})`);
}
for (const driver of drivers) {
  if (driver !== 'sdk' && driver !== 'protocol') throw new Error(`unknown driver ${driver}`);
}

interface Outcome {
  latenciesMs: number[];
  failed: number;
  wallMs: number;
}

interface Figures extends Outcome {
  mode: Mode;
  driver: Driver;
  /** CPU (user + system, all threads) per workflow over the measured window; NaN where /proc is unavailable. */
  loadCpuMs: number;
  serverCpuMs: number;
}

// ---------------------------------------------------------------- CPU accounting (Linux /proc)

const CLOCK_TICK_MS = 10; // USER_HZ is 100 on Linux

function statFields(path: string): { name: string; fields: string[] } {
  const stat = readFileSync(path, 'utf8');
  return {
    name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
    fields: stat.slice(stat.lastIndexOf(')') + 2).split(' '),
  };
}

/** utime + stime of a process or thread stat file, in ms. */
function cpuMsOf(path: string): number {
  const { fields } = statFields(path);
  return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
}

/** Pids of this process's children that are the dev server (empty where /proc is unavailable). */
function serverPids(): number[] {
  try {
    return readdirSync(`/proc/${process.pid}/task`)
      .flatMap((tid) => readFileSync(`/proc/${process.pid}/task/${tid}/children`, 'utf8').split(' '))
      .filter(Boolean)
      .map(Number)
      .filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('temporal-devserver'));
  } catch {
    return [];
  }
}

function serverCpuMs(pids: number[]): number {
  if (pids.length === 0) return Number.NaN;
  try {
    return pids.reduce((sum, pid) => sum + cpuMsOf(`/proc/${pid}/stat`), 0);
  } catch {
    return Number.NaN;
  }
}

function ownCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/** CPU ms per live thread (`name:tid`) of a process, for --threads. */
function threadCpuMs(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const path = `/proc/${pid}/task/${tid}/stat`;
      out.set(`${statFields(path).name}:${tid}`, cpuMsOf(path));
    }
  } catch {
    // a thread exited between listing and reading, or there is no /proc
  }
  return out;
}

function printThreadCpu(label: string, before: Map<string, number>, after: Map<string, number>): void {
  const rows = [...after]
    .map(([thread, ms]) => [thread, (ms - (before.get(thread) ?? 0)) / workflowCount] as const)
    .filter(([, ms]) => ms > 0)
    .sort((a, b) => b[1] - a[1]);
  process.stdout.write(`  ${label} CPU ms/workflow by thread: ${rows.map(([t, ms]) => `${t}=${ms.toFixed(2)}`).join(' ')}\n`);
}

// ---------------------------------------------------------------- drivers

let bundle: ReturnType<typeof bundleWorkflowCode> | undefined;
function benchBundle(): ReturnType<typeof bundleWorkflowCode> {
  bundle ??= bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)),
    logger: new DefaultLogger('ERROR'),
  });
  return bundle;
}

/** Runs `count` jobs with at most `limit` in flight. */
async function pool(count: number, limit: number, job: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, count) }, async () => {
      for (let i = next++; i < count; i = next++) await job(i);
    }),
  );
}

/** Brackets the workload for the CPU figures. */
type Measure = <T>(body: () => Promise<T>) => Promise<T>;

async function runSdk(env: BenchEnv, taskQueue: string, measure: Measure): Promise<Outcome> {
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    workflowBundle: await benchBundle(),
    activities: benchActivities,
    maxConcurrentWorkflowTaskExecutions: 100,
    maxConcurrentActivityTaskExecutions: 200,
    maxConcurrentWorkflowTaskPolls: 50,
    maxConcurrentActivityTaskPolls: 20,
  });
  const client = new Client({ connection: env.connection, namespace: env.namespace ?? 'default' });
  return worker.runUntil(() =>
    measure(async () => {
      const latenciesMs: number[] = [];
      let failed = 0;
      const firstStart = performance.now();
      await pool(workflowCount, concurrency, async (i) => {
        const startedAt = performance.now();
        try {
          const handle = await client.workflow.start(activityAndTimer, {
            taskQueue,
            workflowId: `${taskQueue}-${i}`,
            args: [timerMs],
          });
          if ((await handle.result()) !== 'bench') failed += 1;
          else latenciesMs.push(performance.now() - startedAt);
        } catch (err) {
          failed += 1;
          if (failed === 1) process.stderr.write(`first failure: ${String(err)}\n`);
        }
      });
      return { latenciesMs, failed, wallMs: performance.now() - firstStart };
    }),
  );
}

async function runProtocol(env: BenchEnv, taskQueue: string, measure: Measure): Promise<Outcome> {
  // The driver's own lean HTTP/2 transport: the load generator shares the 2 cores with the server under test.
  const h2 = await H2Connection.connect(env.address);
  try {
    return await measure(async () => {
      const result = await runProtocolDriver({
        connection: h2,
        namespace: env.namespace ?? 'default',
        taskQueue,
        workflows: workflowCount,
        timerMs,
        concurrency,
      });
      if (result.firstError) process.stderr.write(`first error: ${result.firstError}\n`);
      return result;
    });
  } finally {
    await h2.close();
  }
}

/** What a run needs of its server: its address and connections to it. */
interface BenchEnv {
  address: string;
  namespace: string;
  connection: Connection;
  nativeConnection: NativeConnection;
  teardown(): Promise<void>;
}

/**
 * The server for one run: bin/temporal-devserver spawned with the argv @temporalio/testing gives it (time-skipping
 * form, or `server start-dev`), waited for up to two minutes — not the Core SDK's fixed 5 s, which a loaded
 * machine misses — and killed with SIGKILL at the end.
 */
async function launch(mode: Mode): Promise<{ env: BenchEnv; cleanup: () => void }> {
  const port = await freePort();
  const dir = mode === 'dev-server-journal' ? mkdtempSync(join(tmpdir(), 'engine-bench-')) : undefined;
  const args =
    mode === 'time-skipping'
      ? [String(port)]
      : ['server', 'start-dev', '--port', String(port), '--ip', '127.0.0.1', '--namespace', 'default', '--headless'];
  if (dir) args.push('--db-filename', join(dir, 'journal'));
  const child = spawn(DEVSERVER_PATH, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  };
  const address = `127.0.0.1:${port}`;
  try {
    const connection = await eventually(
      async () => {
        // As @temporalio/testing connects: the TestService client exists only when asked for (an internal option).
        const options = {
          address,
          connectTimeout: 1_000,
          [InternalConnectionOptionsSymbol]: { supportsTestService: mode === 'time-skipping' },
        } as Parameters<typeof Connection.connect>[0];
        const candidate = await Connection.connect(options);
        try {
          await candidate.withDeadline(Date.now() + 2_000, () => candidate.workflowService.getSystemInfo({}));
          return candidate;
        } catch (err) {
          await candidate.close();
          throw err;
        }
      },
      `the server on ${address} to answer`,
      120_000,
      250,
    );
    const nativeConnection = await NativeConnection.connect({ address });
    const env: BenchEnv = {
      address,
      namespace: 'default',
      connection,
      nativeConnection,
      teardown: async () => {
        await nativeConnection.close().catch(() => undefined);
        await connection.close().catch(() => undefined);
        await kill();
      },
    };
    return { env, cleanup: () => (dir ? rmSync(dir, { recursive: true, force: true }) : undefined) };
  } catch (err) {
    await kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function run(mode: Mode, driver: Driver): Promise<Figures> {
  const { env, cleanup } = await launch(mode);
  try {
    const taskQueue = uniqueId(`bench-${driver}`);
    let loadCpu = Number.NaN;
    let serverCpu = Number.NaN;
    // Brackets only the workload (not server start-up, bundling or worker creation) for the CPU figures.
    const measure: Measure = async (body) => {
      // One unlock for the whole batch (instead of the TimeSkippingClient's unlock/lock around every
      // result() call), so the figures measure the server rather than 2 extra RPCs per workflow.
      if (mode === 'time-skipping') await env.connection.testService?.unlockTimeSkipping({});
      const servers = serverPids();
      const threadsBefore = values.threads ? [threadCpuMs(process.pid), ...servers.map(threadCpuMs)] : [];
      const loadBefore = ownCpuMs();
      const serverBefore = serverCpuMs(servers);
      const result = await body();
      loadCpu = ownCpuMs() - loadBefore;
      serverCpu = serverCpuMs(servers) - serverBefore;
      if (values.threads) {
        process.stdout.write(`${mode} / ${driver}:\n`);
        printThreadCpu('load', threadsBefore[0]!, threadCpuMs(process.pid));
        for (const [i, pid] of servers.entries()) printThreadCpu('server', threadsBefore[i + 1]!, threadCpuMs(pid));
      }
      if (mode === 'time-skipping') await env.connection.testService?.lockTimeSkipping({});
      return result;
    };
    const outcome = await (driver === 'sdk' ? runSdk : runProtocol)(env, taskQueue, measure);
    return { ...outcome, mode, driver, loadCpuMs: loadCpu / workflowCount, serverCpuMs: serverCpu / workflowCount };
  } finally {
    await env.teardown();
    cleanup();
  }
}

// ---------------------------------------------------------------- report

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)] ?? Number.NaN;
}

const fixed = (n: number, digits: number) => (Number.isNaN(n) ? '-' : n.toFixed(digits));

function printTable(rows: Figures[]): void {
  const header = [
    'mode',
    'driver',
    'workflows',
    'failed',
    'wall s',
    'workflows/s',
    'p50 ms',
    'p99 ms',
    'load cpu ms/wf',
    'server cpu ms/wf',
  ];
  const lines = rows.map((r) => {
    const sorted = [...r.latenciesMs].sort((a, b) => a - b);
    return [
      r.mode,
      r.driver,
      String(workflowCount),
      String(r.failed),
      fixed(r.wallMs / 1000, 2),
      fixed((workflowCount - r.failed) / (r.wallMs / 1000), 1),
      fixed(percentile(sorted, 50), 0),
      fixed(percentile(sorted, 99), 0),
      fixed(r.loadCpuMs, 2),
      fixed(r.serverCpuMs, 2),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const format = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${format(header)}\n${format(widths.map((w) => '-'.repeat(w)))}\n`);
  for (const line of lines) process.stdout.write(`${format(line)}\n`);
  const cores = availableParallelism();
  for (const r of rows) {
    if (r.driver !== 'sdk' || Number.isNaN(r.loadCpuMs)) continue;
    process.stdout.write(
      `${r.mode}: the SDK alone used ${r.loadCpuMs.toFixed(2)} ms CPU per workflow; even with a server that cost ` +
        `nothing, ${cores} cores could run at most ${((cores * 1000) / r.loadCpuMs).toFixed(0)} workflows/s through it.\n`,
    );
  }
}

process.stdout.write(
  `engine benchmark: ${workflowCount} workflows x (1 activity + 1 timer of ${timerMs} ms), ` +
    `at most ${concurrency} in flight, modes: ${modes.join(', ')}, drivers: ${drivers.join(', ')}, ` +
    `${availableParallelism()} cores\n`,
);
const rows: Figures[] = [];
for (const mode of modes) for (const driver of drivers) rows.push(await run(mode, driver));
printTable(rows);
if (rows.some((r) => r.failed > 0)) process.exitCode = 1;
