/**
 * Webhook delivery benchmark, through the real path: the webhook service's deliver (a sealed row in PGlite)
 * -> the delivery workflow on the embedded engine (bin/temporal-devserver with its journal on disk, as
 * `npm start` runs it) -> the attempt activity on paygate's worker (sign, POST through the SSRF-safe undici
 * client, record) -> a node:http receiver on loopback answering 200. Next to it, in the same run, raw undici
 * POSTs of the same body to the same receiver. Then memory with pending retries: deliveries to a receiver
 * answering 500, each after two or more failed attempts waiting on a ladder timer (5 min, 30 min, ...).
 *
 *   npm run bench:webhooks                               # 1000 deliveries, 10,000 pending retries
 *   npm run bench:webhooks -- -n 2000 --concurrency 200 --pending 2000
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:webhooks   # Postgres instead of PGlite
 *   npm run bench:webhooks -- --engine 127.0.0.1:7233    # an engine started by hand (to profile it)
 *
 * Prints figures; never a test. Memory: this process holds the worker, the service and PGlite; the engine
 * is its own process (RSS from /proc, Linux).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { Agent, request } from 'undici';
import { createActivities } from '../src/activities/index.js';
import { newId } from '../src/platform/ids.js';
import { MESSAGE_EVENTS, type OutboundEvent } from '../src/webhooks/rules.js';
import { createServices } from '../src/composition/services.js';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../src/platform/security/keyring.js';
import { dropSchema, openDatabase } from '../src/platform/db/db.js';
import { createStores } from '../src/composition/stores.js';
import { connectTemporalClient } from '../src/platform/temporal/client.js';
import { startEmbeddedEngine } from '../src/platform/temporal/embedded-engine.js';
import type { TemporalTransport } from '../src/platform/temporal/transport.js';
import { createPaygateWorker } from '../src/platform/temporal/worker.js';

const { values } = parseArgs({
  options: {
    deliveries: { type: 'string', short: 'n' },
    concurrency: { type: 'string' },
    pending: { type: 'string' },
    // an engine started by hand (e.g. `node --cpu-prof bin/temporal-devserver server start-dev ...` to profile it)
    engine: { type: 'string' },
  },
});
const deliveries = Number(values.deliveries ?? 1000);
const concurrency = Number(values.concurrency ?? 100);
const pending = Number(values.pending ?? 10_000);
/**
 * Pending deliveries per endpoint: queueing 10,000 takes longer than the 5-minute rung, so early ones make
 * their third and fourth attempts meanwhile; two per endpoint stay under the 10-in-a-row auto-disable.
 */
const PENDING_PER_ENDPOINT = 2;
for (const [name, n] of Object.entries({ deliveries, concurrency, pending })) {
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer`);
}

Runtime.install({
  logger: new DefaultLogger('ERROR'),
  telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
});

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
function rssOf(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmRSS:'));
    return line ? Number(line.split(/\s+/)[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** CPU time (user + system, every thread) of another process, in ms, from /proc (Linux; clock ticks of 10 ms). */
function cpuOf(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}
const selfCpu = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** The pid of the process listening on the engine's port (from `ss`), for its CPU and memory figures. */
function enginePid(address: string): number | undefined {
  const port = address.split(':').pop();
  try {
    const out = execFileSync('ss', ['-Hltnp', `sport = :${port}`], { encoding: 'utf8' });
    const pid = /pid=(\d+)/.exec(out)?.[1];
    return pid === undefined ? undefined : Number(pid);
  } catch {
    return undefined;
  }
}

/** A receiver on loopback answering `status` to everything; counts what it got. */
async function receiver(status: number): Promise<{ url: string; count: () => number; close: () => Promise<void> }> {
  let count = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count++;
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'no');
    });
  });
  server.keepAliveTimeout = 10_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    count: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Runs `task(i)` for i in [0, n) with at most `limit` in flight. */
async function pool(n: number, limit: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, n) }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const event = (i: number): OutboundEvent => {
  const tags = [`rcpt_${i}`, `ref-${i}`, 'BENCH'];
  return {
    event: MESSAGE_EVENTS[301],
    eventCode: 301,
    tags,
    payload: { event: MESSAGE_EVENTS[301], event_code: 301, receipt_id: `rcpt_${i}`, ref_id: `ref-${i}`, tags },
  };
};

const workDir = await mkdtemp(join(tmpdir(), 'paygate-bench-webhooks-'));
// the embedded engine with its credential, as npm start runs it (a hand-started one: whatever it was started with)
const engine: { address: string; pid: number | undefined; transport?: TemporalTransport; stop(): Promise<void> } = values.engine
  ? { address: values.engine, pid: enginePid(values.engine), stop: async () => undefined }
  : await startEmbeddedEngine({
      dataDir: join(workDir, 'temporal'),
      namespace: 'default',
      token: randomBytes(24).toString('base64url'),
    });
// PGlite in this process (npm start's default), or a Postgres server when DATABASE_URL is set (a schema of its own)
const benchSchema = process.env.DATABASE_URL ? `bench_${newId()}` : undefined;
const database = process.env.DATABASE_URL
  ? await openDatabase({ databaseUrl: process.env.DATABASE_URL, schema: benchSchema!, poolSize: 20 })
  : await openDatabase({ inMemory: true });
const keyring = createKeyring(parseKeyringSpec(generateKeyringSpec('bench')));
const stores = createStores(database.db, keyring);
const taskQueue = `bench-webhooks-${newId()}`;
const temporal = await connectTemporalClient({
  address: engine.address,
  namespace: 'default',
  keyring,
  transport: engine.transport,
});
const services = createServices({
  stores,
  gateways: { get: () => undefined, names: [] },
  wallClock: () => new Date(),
  businessClock: () => new Date(),
  sandbox: true,
  workflows: { client: temporal.client, taskQueue },
});
const worker = await createPaygateWorker({
  address: engine.address,
  transport: engine.transport,
  namespace: 'default',
  taskQueue,
  keyring,
  activities: createActivities({ stores, services, gateways: { get: () => undefined, names: [] }, webhooks: { sandbox: true } }),
});
const running = worker.run();
const ok = await receiver(200);
const failing = await receiver(500);

async function projectWithWebhook(url: string) {
  const { project } = await services.projects.create({ name: `bench ${newId()}` });
  await services.webhooks.save(project, { url });
  return project;
}

try {
  console.log(
    `webhook delivery benchmark: ${deliveries} deliveries, concurrency ${concurrency}, ${pending} pending retries, database ${database.kind}`,
  );
  const project = await projectWithWebhook(ok.url);
  const body = JSON.stringify(event(0).payload);

  // warm-up: the worker's bundle, connections, JIT
  await pool(50, 50, (i) => services.webhooks.deliverMessageEvent(project.application_id, event(i)));
  await until('the warm-up deliveries', async () => ok.count() >= 50, 120_000);

  // raw undici: the same receiver, the same body, the same concurrency
  const agent = new Agent({ keepAliveTimeout: 4_000 });
  const rawStart = performance.now();
  await pool(deliveries, concurrency, async () => {
    const res = await request(ok.url, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
      dispatcher: agent,
    });
    await res.body.dump();
  });
  const rawMs = performance.now() - rawStart;
  await agent.close();

  // the real path: deliver -> workflow -> activity -> receiver -> recorded 'done'
  const before = ok.count();
  const ids: string[] = [];
  const cpuBefore = { self: selfCpu(), engine: cpuOf(engine.pid) };
  const pathStart = performance.now();
  await pool(deliveries, concurrency, async (i) => {
    const row = await services.webhooks.deliverMessageEvent(project.application_id, event(i));
    ids.push(row!.delivery_id);
  });
  const queuedMs = performance.now() - pathStart;
  let lastProgress = performance.now();
  await until(
    'every delivery to reach the receiver',
    async () => {
      if (performance.now() - lastProgress > 30_000) {
        lastProgress = performance.now();
        console.log(`  ... ${ok.count() - before} of ${deliveries} received`);
      }
      return ok.count() - before >= deliveries;
    },
    600_000,
  );
  await until(
    'every delivery to be recorded done',
    async () => {
      const { n } = await database.db
        .selectFrom('webhook_deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'done')
        .executeTakeFirstOrThrow();
      return Number(n) >= deliveries + 50;
    },
    600_000,
  );
  const pathMs = performance.now() - pathStart;
  const cpuPer = {
    self: (selfCpu() - cpuBefore.self) / deliveries,
    engine: (cpuOf(engine.pid) - cpuBefore.engine) / deliveries,
  };

  const rawRate = deliveries / (rawMs / 1000);
  const pathRate = deliveries / (pathMs / 1000);
  console.log(`raw undici POSTs:        ${rawRate.toFixed(0)} /s  (${deliveries} in ${(rawMs / 1000).toFixed(2)} s)`);
  console.log(`delivered (real path):   ${pathRate.toFixed(0)} /s  (${deliveries} in ${(pathMs / 1000).toFixed(2)} s)`);
  console.log(`  of which queueing:     ${(queuedMs / 1000).toFixed(2)} s (rows saved, workflows started)`);
  console.log(`ratio:                   ${(pathRate / rawRate).toFixed(3)} x raw (target >= 0.3)`);
  console.log(
    `CPU per delivery:        ${(cpuPer.self + cpuPer.engine).toFixed(1)} ms = worker+API+PGlite+receiver ${cpuPer.self.toFixed(1)} ms + engine ${cpuPer.engine.toFixed(1)} ms`,
  );

  if (pending > 0) {
    const baseline = { self: process.memoryUsage(), engine: rssOf(engine.pid) };
    const endpoints = Math.ceil(pending / PENDING_PER_ENDPOINT);
    const projects: Awaited<ReturnType<typeof projectWithWebhook>>[] = [];
    for (let i = 0; i < endpoints; i++) projects.push(await projectWithWebhook(failing.url));
    console.log(`  ${endpoints} endpoints created; queueing ${pending} deliveries to a receiver answering 500`);
    const createStart = performance.now();
    await pool(pending, concurrency, (i) =>
      services.webhooks.deliverMessageEvent(projects[i % endpoints]!.application_id, event(i)),
    );
    // first attempt at once, the second after 5 s: then every one waits on a rung of 5 minutes or more
    const createdS = (performance.now() - createStart) / 1000;
    let lastReport = performance.now();
    await until(
      'every pending delivery to wait after two or more attempts',
      async () => {
        const { n } = await database.db
          .selectFrom('webhook_deliveries')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('status', '=', 'ready')
          .where('retry_count', '>=', 2)
          .executeTakeFirstOrThrow();
        if (performance.now() - lastReport > 30_000) {
          lastReport = performance.now();
          console.log(`  ... ${n} of ${pending} waiting after two or more attempts`);
        }
        return Number(n) >= pending;
      },
      3_600_000,
    );
    const settledS = (performance.now() - createStart) / 1000;
    global.gc?.();
    const self = process.memoryUsage();
    const engineRss = rssOf(engine.pid);
    console.log(
      `pending retries:         ${pending} (on ${endpoints} endpoints, each waiting after 2+ failed attempts; queued in ${createdS.toFixed(0)} s, settled in ${settledS.toFixed(0)} s)`,
    );
    console.log(
      `  worker+API+PGlite:     RSS ${mb(self.rss)} (before ${mb(baseline.self.rss)}), heap ${mb(self.heapUsed)} (before ${mb(baseline.self.heapUsed)})`,
    );
    console.log(`  engine:                RSS ${mb(engineRss)} (before ${mb(baseline.engine)})`);
  }
} finally {
  await worker.shutdown().catch(() => undefined);
  await running.catch(() => undefined);
  await temporal.close();
  await engine.stop();
  await database.close();
  if (process.env.DATABASE_URL && benchSchema) await dropSchema(process.env.DATABASE_URL, benchSchema);
  await ok.close();
  await failing.close();
  await rm(workDir, { recursive: true, force: true });
}
