// The stack `npm start` runs in sandbox mode, for tests that drive the sandbox clock over HTTP: the embedded engine
// in dev-server mode with its journal, --clock-control and its token (DATA_DIR/engine-token, started by
// startConfiguredEngine as src/main.ts starts it), the real worker whose activities (as src/composition/index.ts's
// createWorker builds them) read the one sandbox clock, and the test app on the same clock and engine.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createActivities } from '../../src/activities/index.js';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { connectTemporalClient } from '../../src/platform/temporal/client.js';
import { startConfiguredEngine } from '../../src/composition/index.js';
import { parseConfig } from '../../src/platform/config/index.js';
import type { EmbeddedEngine } from '../../src/platform/temporal/embedded-engine.js';
import { type ConnectedSandboxClock, createSandboxClock, followEngineTime } from '../../src/platform/temporal/sandbox-clock.js';
import { createPaygateWorker } from '../../src/platform/temporal/worker.js';
import { buildTestApp, type TestApp } from './app.js';
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
  const keyring = createKeyring(parseKeyringSpec(generateKeyringSpec('test')));
  const temporal = await connectTemporalClient({
    address: engine.address,
    transport: engine.transport,
    namespace: 'default',
    keyring,
  });
  const taskQueue = `${label}-${randomUUID()}`;
  const t = await buildTestApp({
    clock: clock.now,
    sandboxClock: clock,
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
        webhooks: { sandbox: true, clock: clock.now },
      }),
      clock,
    ),
  });
  const running = worker.run();

  const close = async (): Promise<void> => {
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
