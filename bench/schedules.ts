/**
 * Subscription schedules benchmark, on the stack `npm start` runs in sandbox mode (the wiring of src/main.ts):
 * the embedded engine with --clock-control (its own process, journal on disk), in this process the worker and the
 * API on loopback, beside it PGlite under a temporary DATA_DIR in its own process (or Postgres with DATABASE_URL, in
 * a schema of its own) and the sandbox PGs in theirs, all on the one sandbox clock. Through the HTTP API: a project, billing keys,
 * then N active monthly schedules sharing one billing anchor a month ahead (a merchant's billing day: every one
 * due at the same instant, the burst the targets are about). Then one `POST /sandbox/v1/clock/advance` (with the
 * admin token) to that anchor, and the time until every schedule's period is charged, charges/s, the lateness after
 * the due time, and the CPU per charge and the peak RSS of each process.
 *
 *   npm run bench:schedules                         # 10,000 schedules on 100 billing keys
 *   npm run bench:schedules -- -n 1000 --keys 20 --concurrency 16
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:schedules   # Postgres instead of PGlite
 *   TEMPORAL_MAX_CACHED_WORKFLOWS=2000 npm run bench:schedules                     # the worker's sticky cache
 *   NODE_OPTIONS=--max-old-space-size=512 npm run bench:schedules                  # the heap a 1 GiB container gets
 *
 * Prints figures; never a test. Targets (issue 12): all charged within 120 s of the advance, RSS < 1 GiB.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import v8 from 'node:v8';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { Agent, request } from 'undici';
import { buildConfiguredApp } from '../src/api/server.js';
import { preparePrivateDataDir } from '../src/platform/config/data-dir.js';
import { parseConfig } from '../src/platform/config/index.js';
import { loadKeyring } from '../src/platform/config/keys.js';
import { newId } from '../src/platform/ids.js';
import { dueAt } from '../src/schedules/rules.js';
import { createLogger } from '../src/platform/logger.js';
import { dropSchema, openDatabase } from '../src/platform/db/db.js';
import { createStores } from '../src/composition/stores.js';
import { createSandboxClock } from '../src/platform/temporal/sandbox-clock.js';
import {
  connectTemporal,
  type Core,
  createClocks,
  createCoreServices,
  startConfiguredEngine,
  startConfiguredGateways,
  syncingSandboxClock,
} from '../src/composition/index.js';
import { createWorker } from '../src/composition/worker-process.js';
import { cpuMs, memoryOf } from './proc-stats.js';

const { values } = parseArgs({
  options: {
    schedules: { type: 'string', short: 'n' },
    keys: { type: 'string' },
    concurrency: { type: 'string' },
    'wait-seconds': { type: 'string' },
  },
});
const total = Number(values.schedules ?? 10_000);
const keyCount = Math.min(Number(values.keys ?? 100), total);
const concurrency = Number(values.concurrency ?? 32);
const waitSeconds = Number(values['wait-seconds'] ?? 900);
for (const [name, n] of Object.entries({ schedules: total, keys: keyCount, concurrency, 'wait-seconds': waitSeconds })) {
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
}
const TARGET_SECONDS = 120;
const TARGET_RSS = 1024 ** 3;

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Cleanup steps must not hang the bench. */
const bounded = <T>(p: Promise<T>, ms: number) => Promise.race([p, sleep(ms)]).catch(() => undefined);

const workDir = await mkdtemp(join(tmpdir(), 'paygate-bench-schedules-'));
const benchSchema = process.env.DATABASE_URL ? `bench_${newId()}` : undefined;
const adminToken = randomBytes(24).toString('base64url');
const config = parseConfig({
  PAYGATE_SANDBOX: 'true',
  DATA_DIR: workDir,
  HOST: '127.0.0.1',
  PORT: '0',
  ADMIN_TOKEN: adminToken,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'error',
  DATABASE_URL: process.env.DATABASE_URL,
  TEMPORAL_MAX_CACHED_WORKFLOWS: process.env.TEMPORAL_MAX_CACHED_WORKFLOWS,
});
const logger = createLogger({ level: config.logLevel });
// the SDK core's warnings (workflow tasks slower than 5 s, tasks timed out) would drown the figures on a loaded machine
Runtime.install({
  logger: new DefaultLogger('ERROR'),
  telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
});
const closers: (() => Promise<unknown>)[] = [];
let exitCode = 0;

try {
  // src/main.ts's wiring; only the database differs with DATABASE_URL (a schema of its own, dropped at the end)
  const sandboxClock = createSandboxClock();
  await preparePrivateDataDir(config.dataDir);
  const { keyring } = await loadKeyring(config);
  const database = config.databaseUrl
    ? await openDatabase({ databaseUrl: config.databaseUrl, schema: benchSchema!, poolSize: 20 })
    : await openDatabase({ dataDir: join(workDir, 'pglite'), ownProcess: true });
  closers.push(() => database.close());
  const gateways = await startConfiguredGateways(config, logger, sandboxClock.now, { ownProcess: true });
  closers.push(() => gateways.close());
  const core: Core = {
    config,
    keyring,
    database,
    gateways,
    stores: createStores(database.db, keyring),
    close: async () => undefined,
  };
  // DATA_DIR/temporal, the token in DATA_DIR/engine-token: as src/main.ts starts it
  const engine = await startConfiguredEngine(config, { clockControl: true });
  closers.push(() => engine.stop());
  const connected = await sandboxClock.connect(engine.address, engine.transport);
  closers.push(() => connected.close());
  // the sandbox PGs' process learns each new time before the work that follows it
  const clock = syncingSandboxClock(connected, gateways);
  await gateways.syncSandboxClock?.();
  const temporal = await connectTemporal(core, engine.address, { transport: engine.transport });
  closers.push(() => temporal.close());
  const clocks = createClocks(clock);
  const services = createCoreServices(core, temporal, logger, clocks);
  const worker = await createWorker(core, services, engine.address, { sandboxClock: clock, clocks, transport: engine.transport });
  closers.push(() => bounded(worker.shutdown(), 30_000));
  const running = worker.run();
  running.catch((err: unknown) => logger.fatal({ err }, 'the Temporal worker stopped'));
  const app = await buildConfiguredApp({
    core,
    logger,
    temporal,
    services,
    readiness: { worker: () => worker.worker.getState() === 'RUNNING' },
    sandboxClock: clock,
    clocks,
  });
  closers.push(() => app.close());
  const base = await app.listen({ host: '127.0.0.1', port: 0 });

  const agent = new Agent({ connections: concurrency + 4 });
  closers.push(() => agent.close());
  const call = async (method: 'GET' | 'POST', path: string, auth: string, body?: unknown) => {
    const res = await request(`${base}${path}`, {
      method,
      dispatcher: agent,
      headers: {
        authorization: auth,
        ...(body === undefined ? {} : { 'content-type': 'application/json', 'idempotency-key': randomUUID() }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await res.body.json()) as Record<string, unknown>;
    if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${JSON.stringify(json)}`);
    return json;
  };
  const inParallel = async (n: number, one: (i: number) => Promise<void>) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(concurrency, n) }, async () => {
        for (let i = next++; i < n; i = next++) await one(i);
      }),
    );
  };

  const project = await call('POST', '/admin/v1/projects', `Bearer ${adminToken}`, { name: 'bench schedules' });
  const applicationId = project.application_id as string;
  const auth = `Basic ${Buffer.from(`${project.client_key as string}:${project.secret_key as string}`).toString('base64')}`;
  const keys: string[] = [];
  await inParallel(keyCount, async (i) => {
    const issued = await call('POST', '/v2/request/subscribe', auth, {
      pg: 'sandbox_card',
      method: '카드자동(REST)',
      subscription_id: `bench-${i}`,
      order_name: 'Monthly plan',
      card_no: '4111111111111111',
      card_pw: '12',
      card_identity_no: '900101',
      card_expire_year: '30',
      card_expire_month: '12',
    });
    keys[i] = issued.billing_key as string;
  });

  // the billing anchor: a month ahead of the sandbox clock, on a whole minute
  const now = new Date((await call('GET', '/sandbox/v1/clock', auth)).now as string);
  const minute = new Date(Math.ceil(now.getTime() / 60_000) * 60_000 + 60_000).toISOString();
  const anchor = dueAt({ startAt: minute, interval: 'month', intervalCount: 1 }, 2);
  const startAt = anchor.toISOString();
  console.log(
    `bench:schedules: ${total} monthly schedules on ${keyCount} billing keys, ${config.databaseUrl ? 'Postgres' : 'PGlite'}, ` +
      `sticky cache ${config.maxCachedWorkflows ?? 'default'}, V8 heap limit ${mb(v8.getHeapStatistics().heap_size_limit)}; ` +
      `all due at ${startAt}`,
  );

  const createStarted = performance.now();
  let created = 0;
  await inParallel(total, async (i) => {
    await call('POST', '/v2/subscribe/schedules', auth, {
      billing_key: keys[i % keyCount],
      order_name: 'Pro plan',
      price: 9_900,
      interval: 'month',
      start_at: startAt,
    });
    created++;
    if (created % 2000 === 0) console.log(`  created ${created}`);
  });
  const createMs = performance.now() - createStarted;
  // the runs' first tasks (each sets its timer) settle: an advance of one second answers once nothing is outstanding
  for (let settled = false; !settled; ) {
    settled = (await call('POST', '/sandbox/v1/clock/advance', `Bearer ${adminToken}`, { seconds: 1 })).settled === true;
  }
  const settledMs = performance.now() - createStarted;
  console.log(
    `  created ${total} schedules in ${secs(createMs)} (${(total / (createMs / 1000)).toFixed(0)} /s over HTTP); ` +
      `their runs settled after ${secs(settledMs)}`,
  );

  // npm start's processes: this one (API + worker), the engine, the database (PGlite) and the sandbox PGs
  const processes: Record<string, number> = {
    [`this process (pid ${process.pid}: API + worker${config.databaseUrl ? ' + Postgres pool' : ''})`]: process.pid,
    [`engine (pid ${engine.pid}, bin/temporal-devserver)`]: engine.pid!,
    ...(database.process ? { [`database (pid ${database.process.pid}, PGlite)`]: database.process.pid } : {}),
    ...(gateways.sandboxProcess ? { [`sandbox PGs (pid ${gateways.sandboxProcess.pid})`]: gateways.sandboxProcess.pid } : {}),
  };
  const each = (read: (pid: number) => number) =>
    Object.fromEntries(Object.entries(processes).map(([name, pid]) => [name, read(pid)]));
  const baseline = each((pid) => memoryOf(pid).rss);
  const peak = { ...baseline };
  const samplePeak = () => {
    for (const [name, pid] of Object.entries(processes)) peak[name] = Math.max(peak[name]!, memoryOf(pid).rss);
  };
  const sampler = setInterval(samplePeak, 250);
  sampler.unref();

  const paidCount = async () => {
    const row = await database.db
      .selectFrom('schedule_charges')
      .select((eb) => [
        eb.fn.countAll<string>().as('n'),
        eb.fn.count<string>('schedule_id').filterWhere('status', '=', 'paid').as('paid'),
      ])
      .where('period', '=', 1)
      .executeTakeFirstOrThrow();
    return { charges: Number(row.n), paid: Number(row.paid) };
  };

  const cpuBefore = each(cpuMs);
  const advanceStarted = performance.now();
  let advanceAnswer: { ms: number; settled: unknown } | undefined;
  // Each run set its timer a little after it read the time (its first workflow task's latency, seconds while
  // thousands of runs start), so the timers come due just after the anchor: the advance to the anchor answers at
  // once (settled) and they fire on the clock's own time in the next seconds, all together. An advance past them
  // would fire them one due time at a time, each once the work before it settled.
  const advancing = call('POST', '/sandbox/v1/clock/advance', `Bearer ${adminToken}`, { to: startAt }).then((body) => {
    advanceAnswer = { ms: performance.now() - advanceStarted, settled: body.settled };
  });
  advancing.catch((err: unknown) => console.error('  the advance failed:', err));
  let paid = 0;
  let lastReport = advanceStarted;
  const deadline = advanceStarted + waitSeconds * 1000;
  while (performance.now() < deadline) {
    ({ paid } = await paidCount());
    if (paid >= total) break;
    if (performance.now() - lastReport >= 10_000) {
      lastReport = performance.now();
      console.log(`  ${secs(lastReport - advanceStarted)} after the advance: ${paid} charged`);
    }
    await sleep(250);
  }
  const allMs = performance.now() - advanceStarted;
  const cpuAfter = each(cpuMs);
  clearInterval(sampler);
  samplePeak();
  await bounded(advancing, 65_000);

  const rows = await database.db
    .selectFrom('schedule_charges')
    .select(['due_at', 'charged_at'])
    .where('period', '=', 1)
    .where('status', '=', 'paid')
    .execute();
  const lateness = rows
    .filter((r) => r.charged_at !== null)
    .map((r) => new Date(r.charged_at!).getTime() - new Date(r.due_at).getTime())
    .sort((a, b) => a - b);
  const receipts = await database.db
    .selectFrom('receipts')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('application_id', '=', applicationId)
    .where('order_name', '=', 'Pro plan')
    .executeTakeFirstOrThrow();
  const { charges } = await paidCount();

  const allCharged = paid >= total;
  const withinTarget = allCharged && allMs <= TARGET_SECONDS * 1000;
  const peakOverRun = each((pid) => memoryOf(pid).peak);
  console.log(
    allCharged
      ? `  all ${total} charged ${secs(allMs)} after the advance: ${(total / (allMs / 1000)).toFixed(1)} charges/s`
      : `  NOT all charged: ${paid} of ${total} after ${secs(allMs)} (${(paid / (allMs / 1000)).toFixed(1)} charges/s)`,
  );
  console.log(
    `  the advance answered after ${advanceAnswer ? `${secs(advanceAnswer.ms)} (settled ${String(advanceAnswer.settled)})` : 'more than the wait'}`,
  );
  console.log(
    `  lateness after the due time (sandbox clock): p50 ${secs(percentile(lateness, 50))}, ` +
      `p99 ${secs(percentile(lateness, 99))}, max ${secs(lateness.at(-1) ?? Number.NaN)}`,
  );
  console.log(
    `  CPU per charge (user + system, all threads, while charging): ${Object.keys(processes)
      .map((name) => `${name.split(' (')[0]} ${((cpuAfter[name]! - cpuBefore[name]!) / Math.max(paid, 1)).toFixed(1)} ms`)
      .join(', ')}`,
  );
  console.log(`  one charge per period: ${charges} period rows, ${receipts.n} receipts for ${total} schedules`);
  for (const name of Object.keys(processes)) {
    console.log(
      `  ${name}: peak RSS ${mb(peak[name]!)} during the charges (${mb(baseline[name]!)} before), ` +
        `${mb(peakOverRun[name]!)} peak over the whole run`,
    );
  }
  const rssOk = Math.max(...Object.values(peakOverRun)) < TARGET_RSS;
  console.log(
    `  targets: all charged within ${TARGET_SECONDS} s of the advance: ${withinTarget ? 'met' : 'MISSED'}; ` +
      `RSS < 1 GiB (each process): ${rssOk ? 'met' : 'MISSED'}`,
  );
  console.log(allCharged ? `bench:schedules: ALL ${total} CHARGED` : `bench:schedules: ${total - paid} NOT CHARGED`);
  if (!allCharged || Number(receipts.n) !== total) exitCode = 1;
} catch (err) {
  console.error('bench:schedules failed:', err);
  exitCode = 1;
} finally {
  for (const close of closers.reverse()) await bounded(close(), 30_000);
  if (process.env.DATABASE_URL && benchSchema) await bounded(dropSchema(process.env.DATABASE_URL, benchSchema), 30_000);
  await rm(workDir, { recursive: true, force: true }).catch(() => undefined);
  process.exit(exitCode);
}
