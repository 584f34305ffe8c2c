// The stack `npm start` runs in sandbox mode, for tests that drive the sandbox clock over HTTP: the embedded engine
// in dev-server mode with its journal, --clock-control and its token (DATA_DIR/engine-token, started by
// startConfiguredEngine as src/main.ts starts it), the real worker whose activities (as src/composition/worker-process.ts's
// createWorker builds them) stamp on the one sandbox clock, and the test app on the same clocks and engine.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createActivities } from '../../src/activities/index.js';
import { createClocks, deliveringOnAdvance } from '../../src/composition/index.js';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { connectTemporalClient } from '../../src/platform/temporal/client.js';
import { startConfiguredEngine } from '../../src/composition/index.js';
import { parseConfig } from '../../src/platform/config/index.js';
import type { EmbeddedEngine } from '../../src/platform/temporal/embedded-engine.js';
import { type ConnectedSandboxClock, createSandboxClock, followEngineTime } from '../../src/platform/temporal/sandbox-clock.js';
import { createPaygateWorker } from '../../src/platform/temporal/worker.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp } from './app.js';
import { bounded, paygateWorkflowBundle } from './temporal.js';

export interface SandboxClockStack {
  readonly t: TestApp;
  readonly clock: ConnectedSandboxClock;
  /** the DATA_DIR the engine keeps its journal and token under */
  readonly dataDir: string;
  readonly engine: EmbeddedEngine;
  close(): Promise<void>;
}

export async function openSandboxClockStack(label: string): Promise<SandboxClockStack> {
  const dataDir = await mkdtemp(join(tmpdir(), `paygate-${label}-`));
  // with its credential, as npm start runs it: the clock, the client and the worker present the token
  const engine = await startConfiguredEngine(parseConfig({ DATA_DIR: dataDir }), { clockControl: true });
  const clock = await createSandboxClock().connect(engine.address, engine.transport);
  const clocks = createClocks(clock);
  const keyring = createKeyring(parseKeyringSpec(generateKeyringSpec('test')));
  const temporal = await connectTemporalClient({
    address: engine.address,
    transport: engine.transport,
    namespace: 'default',
    keyring,
  });
  const taskQueue = `${label}-${randomUUID()}`;
  // an advance answers once the webhook retries it made due are sent (src/main.ts)
  const dispatcher = { runDue: () => t.deps.services.webhookDispatcher.runDue() };
  const t: TestApp = await buildTestApp({
    // the process's clocks as npm start builds them: the business clock is the sandbox clock's, the wall clock real
    ...clocks,
    sandboxClock: deliveringOnAdvance(clock, dispatcher),
    keyring,
    temporal: { client: temporal.client, taskQueue },
  });
  const worker = await createPaygateWorker({
    address: engine.address,
    transport: engine.transport,
    namespace: 'default',
    taskQueue,
    keyring,
    workflowBundle: await paygateWorkflowBundle(),
    activities: followEngineTime(
      // the app's stores and services: one set per process, over the same client, task queue and clock
      createActivities({
        stores: t.deps.stores,
        services: t.deps.services,
        gateways: t.deps.gateways,
        businessClock: clocks.businessClock,
        webhooks: { sandbox: true, clock: clocks.wallClock },
      }),
      clock,
    ),
  });
  const running = worker.run();
  // the worker process's webhook dispatcher (src/composition/worker-process.ts startWorkerLoops)
  t.deps.services.webhookDispatcher.start();

  const close = async (): Promise<void> => {
    await bounded(t.deps.services.webhookDispatcher.stop(), 15_000, 'the webhook dispatcher to stop').catch(() => undefined);
    await bounded(worker.shutdown(), 15_000, 'the worker to stop').catch(() => undefined);
    await running.catch(() => undefined);
    await t.close();
    await temporal.close();
    await clock.close();
    await engine.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
  return { t, clock, dataDir, engine, close };
}

/**
 * The operator's hold on the sandbox clock over HTTP: `POST /sandbox/v1/clock/advance` takes the admin token (one
 * engine, one clock for every project), and the admin token reads the clock too.
 */
export function adminClock(t: TestApp) {
  const send = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
    const res = await t.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      ...(body === undefined ? {} : { payload: body as object }),
    });
    return { status: res.statusCode, body: res.json() as Record<string, unknown>, headers: res.headers };
  };
  return {
    /** the answer as it came: tests of refusals look at it */
    post: (body: unknown) => send('POST', '/sandbox/v1/clock/advance', body),
    /** one advance that must answer 200 and settled; the clock's time after it */
    async advance(body: { seconds: number } | { to: string }): Promise<Date> {
      const res = await send('POST', '/sandbox/v1/clock/advance', body);
      if (res.status !== 200 || res.body.settled !== true)
        throw new Error(`advance ${JSON.stringify(body)}: ${JSON.stringify(res)}`);
      return new Date(res.body.now as string);
    },
    async now(): Promise<Date> {
      const res = await send('GET', '/sandbox/v1/clock');
      if (res.status !== 200) throw new Error(`GET /sandbox/v1/clock: ${JSON.stringify(res)}`);
      return new Date(res.body.now as string);
    },
  };
}
