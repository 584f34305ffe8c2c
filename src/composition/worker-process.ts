// The worker process's parts, over the core and the services the composition root built: the Temporal worker that
// runs paygate's workflows and its one set of activities, and the loops beside it (the webhook dispatcher and the
// reconcile sweep). Used by the standalone worker (worker.ts), `npm start` (src/main.ts) and the schedules bench.
import { createActivities } from '../activities/index.js';
import type { Logger } from '../platform/logger.js';
import { observingWorkflowClient } from '../platform/observability/workflow-client.js';
import { sweepUnsettled } from '../payments/index.js';
import type { Clocks } from '../platform/time.js';
import { createBundlerLogger } from '../platform/temporal/runtime.js';
import { followEngineTime, type SandboxClock } from '../platform/temporal/sandbox-clock.js';
import type { TemporalTransport } from '../platform/temporal/transport.js';
import { createPaygateWorker, type PaygateWorker } from '../platform/temporal/worker.js';
import { type Core, createClocks, temporalTransport } from './index.js';
import type { Services } from './services.js';

/**
 * The worker that runs paygate's workflows and its one set of activities, over the process's services (built
 * before it, over the Temporal client). `sandboxClock`: the embedded stack's advanceable clock (sandbox mode): the
 * activities follow it (followEngineTime) and stamp the processes' rows on `clocks.businessClock`; webhook
 * attempts are timed and signed on `clocks.wallClock`. `transport`: the embedded engine's, as for connectTemporal.
 */
export function createWorker(
  core: Core,
  services: Services,
  address: string,
  opts: { sandboxClock?: SandboxClock; clocks?: Clocks; transport?: TemporalTransport } = {},
): Promise<PaygateWorker> {
  const clocks = opts.clocks ?? createClocks(opts.sandboxClock);
  const activities = createActivities({
    stores: core.stores,
    services,
    gateways: core.gateways.gateways,
    businessClock: clocks.businessClock,
    webhooks: { sandbox: core.config.sandbox, clock: clocks.wallClock },
    ...(core.metrics ? { metrics: core.metrics } : {}),
  });
  return createPaygateWorker({
    address,
    namespace: core.config.temporalNamespace,
    taskQueue: core.config.taskQueue,
    keyring: core.keyring,
    ...(core.config.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: core.config.maxCachedWorkflows } : {}),
    transport: opts.transport ?? temporalTransport(core.config),
    clientInterceptors: [observingWorkflowClient(core.metrics)],
    ...(core.logger ? { bundlerLogger: createBundlerLogger(core.logger) } : {}),
    ...(core.metrics ? { metrics: core.metrics } : {}),
    activities: opts.sandboxClock
      ? followEngineTime(awaitingSandboxClock(activities, core.gateways.syncSandboxClock), opts.sandboxClock)
      : activities,
  });
}

/**
 * The activities, each first bringing the sandbox PGs' process to the time followEngineTime just learned (an
 * activity fired by an advance calls the PGs in the advanced time). Unchanged when the PGs read the clock themselves.
 */
function awaitingSandboxClock<T extends object>(activities: T, sync: (() => Promise<void>) | undefined): T {
  if (!sync) return activities;
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] =
      typeof fn === 'function'
        ? async (...args: unknown[]) => {
            await sync();
            return (fn as (...a: unknown[]) => unknown)(...args);
          }
        : fn;
  }
  return wrapped as T;
}

/**
 * The worker process's loops beside its Temporal worker: the webhook dispatcher (it sends every delivery, polls for
 * rows other processes saved and retries come due, takes over claims of a dispatcher that died, and adopts an earlier
 * release's deliveries left without a workflow run) and the reconcile sweep. Returns the function that stops both
 * (it waits for the attempts in flight).
 */
export function startWorkerLoops(
  core: Core,
  services: Pick<Services, 'reconcile' | 'webhookDispatcher' | 'verifications'>,
  logger: Logger,
  clocks: Clocks = createClocks(),
): () => Promise<void> {
  const stopReconcile = startReconcileSweep(core, services, logger, clocks);
  services.webhookDispatcher.start();
  return async () => {
    stopReconcile();
    await services.webhookDispatcher.stop();
  };
}

/** How often the worker looks for charges and cancels whose process died mid PG call (see sweepUnsettled). */
export const RECONCILE_SWEEP_INTERVAL_MS = 15_000;

/**
 * Starts the reconcile workflow of every pending charge / cancel whose owner is gone, releases Idempotency-Key
 * records of requests that died, and ends verifications their request left sending without a run: now, then every RECONCILE_SWEEP_INTERVAL_MS. Each is judged by
 * the clock that wrote it: the call windows by the business clock (the charges' and cancels'), the Idempotency-Key
 * records by the wall clock (the API's).
 */
export function startReconcileSweep(
  core: Core,
  services: Pick<Services, 'reconcile' | 'verifications'>,
  logger: Logger,
  clocks: Clocks,
): () => void {
  const { reconcile } = services;
  if (!reconcile) throw new Error('the reconcile sweep needs services built with a workflow runtime');
  let running = false;
  const sweep = async () => {
    if (running) return;
    running = true;
    try {
      const swept = await sweepUnsettled({ stores: core.stores, reconcile, ...clocks });
      if (swept.charges + swept.cancels + swept.keys > 0) logger.info(swept, 'reconcile sweep: owners gone, reconcile started');
      // verifications stored by a request that died before their run started (their rows' times are the database's)
      const orphans = await services.verifications.failOrphanedSends(clocks.wallClock());
      if (orphans > 0)
        logger.info({ verifications: orphans }, 'reconcile sweep: verifications left sending ended as failed requests');
    } catch (err) {
      logger.warn({ err }, 'the reconcile sweep failed; it runs again later');
    } finally {
      running = false;
    }
  };
  void sweep();
  const timer = setInterval(() => void sweep(), RECONCILE_SWEEP_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
