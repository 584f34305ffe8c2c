/**
 * Webhook delivery benchmark, through the real path: the webhook service's deliver (a sealed row, due now) -> the
 * worker's dispatcher, woken in the process (claim with FOR UPDATE SKIP LOCKED, sign, POST through the SSRF-safe
 * undici client, record) -> a node:http receiver on loopback answering 200. No workflow: deliveries do not touch the
 * Temporal engine, which this bench therefore does not start. Next to it, in the same run, raw undici POSTs of the
 * same body to the same receiver. Then memory with pending retries: deliveries to a receiver answering 500, each
 * after two or more failed attempts waiting for its next rung (5 min, 30 min, ...) as a row.
 *
 *   npm run bench:webhooks                               # 1000 deliveries, 10,000 pending retries
 *   npm run bench:webhooks -- -n 2000 --concurrency 200 --pending 2000
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:webhooks   # Postgres instead of PGlite
 *
 * Prints figures; never a test. Memory and CPU: this process holds the service, the dispatcher, the receivers and
 * PGlite (in the process), or the node-postgres pool (the Postgres server's own CPU is not counted).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { newId } from '../src/platform/ids.js';
import { MESSAGE_EVENTS, type OutboundEvent } from '../src/webhooks/rules.js';
import { createServices } from '../src/composition/services.js';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../src/platform/security/keyring.js';
import { dropSchema, openDatabase } from '../src/platform/db/db.js';
import { createStores } from '../src/composition/stores.js';

const { values } = parseArgs({
  options: {
    deliveries: { type: 'string', short: 'n' },
    concurrency: { type: 'string' },
    pending: { type: 'string' },
  },
});
const deliveries = Number(values.deliveries ?? 1000);
const concurrency = Number(values.concurrency ?? 100);
const pending = Number(values.pending ?? 10_000);
/** Pending deliveries per endpoint: two per endpoint stay under the 10-in-a-row auto-disable. */
const PENDING_PER_ENDPOINT = 2;
for (const [name, n] of Object.entries({ deliveries, concurrency, pending })) {
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer`);
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const selfCpu = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

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

// PGlite in this process (npm start's default), or a Postgres server when DATABASE_URL is set (a schema of its own)
const benchSchema = process.env.DATABASE_URL ? `bench_${newId()}` : undefined;
const database = process.env.DATABASE_URL
  ? await openDatabase({ databaseUrl: process.env.DATABASE_URL, schema: benchSchema!, poolSize: 20 })
  : await openDatabase({ inMemory: true });
const keyring = createKeyring(parseKeyringSpec(generateKeyringSpec('bench')));
const stores = createStores(database.db, keyring);
// the worker's dispatcher, built by createServices as the composition root builds it and started as the worker does
const services = createServices({
  stores,
  gateways: { get: () => undefined, names: [] },
  wallClock: () => new Date(),
  businessClock: () => new Date(),
  sandbox: true,
});
services.webhookDispatcher.start();
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

  // warm-up: connections, JIT
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

  // the real path: deliver -> dispatcher (claim, sign, POST) -> receiver -> recorded 'done'
  const before = ok.count();
  const ids: string[] = [];
  const cpuBefore = selfCpu();
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
  const cpuPer = (selfCpu() - cpuBefore) / deliveries;

  const rawRate = deliveries / (rawMs / 1000);
  const pathRate = deliveries / (pathMs / 1000);
  console.log(`raw undici POSTs:        ${rawRate.toFixed(0)} /s  (${deliveries} in ${(rawMs / 1000).toFixed(2)} s)`);
  console.log(`delivered (real path):   ${pathRate.toFixed(0)} /s  (${deliveries} in ${(pathMs / 1000).toFixed(2)} s)`);
  console.log(`  of which queueing:     ${(queuedMs / 1000).toFixed(2)} s (rows saved)`);
  console.log(`ratio:                   ${(pathRate / rawRate).toFixed(3)} x raw (target >= 0.5)`);
  console.log(
    `CPU per delivery:        ${cpuPer.toFixed(1)} ms (service + dispatcher + ${database.kind === 'pglite' ? 'PGlite' : 'pg pool'} + receiver; no engine)`,
  );

  if (pending > 0) {
    global.gc?.();
    const baseline = process.memoryUsage();
    const endpoints = Math.ceil(pending / PENDING_PER_ENDPOINT);
    const projects: Awaited<ReturnType<typeof projectWithWebhook>>[] = [];
    for (let i = 0; i < endpoints; i++) projects.push(await projectWithWebhook(failing.url));
    console.log(`  ${endpoints} endpoints created; queueing ${pending} deliveries to a receiver answering 500`);
    const createStart = performance.now();
    await pool(pending, concurrency, (i) =>
      services.webhooks.deliverMessageEvent(projects[i % endpoints]!.application_id, event(i)),
    );
    // first attempt at once, the second after 5 s: then every one waits as a row for a rung of 5 minutes or more
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
    console.log(
      `pending retries:         ${pending} (on ${endpoints} endpoints, each waiting after 2+ failed attempts; queued in ${createdS.toFixed(0)} s, settled in ${settledS.toFixed(0)} s)`,
    );
    console.log(
      `  service+dispatcher+${database.kind === 'pglite' ? 'PGlite' : 'pg'}: RSS ${mb(self.rss)} (before ${mb(baseline.rss)}), heap ${mb(self.heapUsed)} (before ${mb(baseline.heapUsed)})`,
    );
    console.log('  engine:                not used by deliveries (nothing added)');
  }
} finally {
  await services.webhookDispatcher.stop();
  await database.close();
  if (process.env.DATABASE_URL && benchSchema) await dropSchema(process.env.DATABASE_URL, benchSchema);
  await ok.close();
  await failing.close();
}
