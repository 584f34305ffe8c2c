// The real stack with the engine's continue-as-new suggestion lowered, for tests of how paygate's long-lived
// workflows keep their histories bounded: the embedded engine in dev-server mode (real clock) started with
// `limit.historyCount.suggestContinueAsNew=<events>`, the real worker and activities on the test app's database
// and gateways, and the app on that engine (listening on loopback when asked, so the sandbox PGs can notify it).
import { randomUUID } from 'node:crypto';
import { createActivities } from '../../src/activities/index.js';
import { createKeyring, generateKeyringSpec, type Keyring, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { connectTemporalClient } from '../../src/platform/temporal/client.js';
import { createPaygateWorker } from '../../src/platform/temporal/worker.js';
import { DevServerProcess, freePort } from '../engine/support/devserver-process.js';
import { buildTestApp, type TestApp } from './app.js';
import { bounded, paygateWorkflowBundle } from './temporal.js';

export interface HistoryCapsStack {
  readonly t: TestApp;
  readonly server: DevServerProcess;
  close(): Promise<void>;
}

export async function openHistoryCapsStack(opts: {
  suggestAtEvents: number;
  listen?: boolean;
  /** the payload codec's keyring (a replay fixture's); a fresh one otherwise */
  keyring?: Keyring;
}): Promise<HistoryCapsStack> {
  const server = new DevServerProcess({
    port: await freePort(),
    dynamicConfig: [`limit.historyCount.suggestContinueAsNew=${opts.suggestAtEvents}`],
  });
  const closers: (() => Promise<unknown>)[] = [() => server.kill9()];
  const close = async () => {
    for (const fn of closers.reverse()) await fn().catch(() => undefined);
  };
  try {
    await server.client();
    const keyring = opts.keyring ?? createKeyring(parseKeyringSpec(generateKeyringSpec('test')));
    const temporal = await connectTemporalClient({ address: server.address, namespace: 'default', keyring });
    closers.push(() => temporal.close());
    const taskQueue = `history-caps-${randomUUID()}`;
    const port = opts.listen ? await freePort() : undefined;
    const t = await buildTestApp({
      keyring,
      temporal: { client: temporal.client, taskQueue },
      ...(port !== undefined ? { env: { PORT: String(port) } } : {}),
    });
    closers.push(() => t.close());
    if (port !== undefined) await t.app.listen({ host: '127.0.0.1', port });
    const worker = await createPaygateWorker({
      address: server.address,
      namespace: 'default',
      taskQueue,
      keyring,
      workflowBundle: await paygateWorkflowBundle(),
      // the app's stores and services: one set per process, over the same client and task queue
      activities: createActivities({
        stores: t.deps.stores,
        services: t.deps.services,
        gateways: t.deps.gateways,
        webhooks: { sandbox: true },
      }),
    });
    const running = worker.run();
    closers.push(async () => {
      await bounded(worker.shutdown(), 15_000, 'the worker to stop');
      await running;
    });
    return { t, server, close };
  } catch (err) {
    await close();
    throw err;
  }
}
