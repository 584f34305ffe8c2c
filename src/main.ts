// `npm start`: everything in one command. The API and the Temporal worker in this process; beside it, in processes
// of their own that end with it, the database (PGlite under DATA_DIR unless DATABASE_URL is set), the sandbox
// gateways, and — unless TEMPORAL_ADDRESS is set — the embedded Temporal-compatible engine, durable under DATA_DIR.
// When one of them dies, the rest shut down.
import { buildConfiguredApp, exitIfPortInUse, type Listening, listen } from './api/server.js';
import { PortInUseError, reservePorts, startupBanner } from './api/startup.js';
import { readConfigOrExit } from './platform/config/index.js';
import { DataDirInUseError, lockDataDir } from './platform/data-dir-lock.js';
import { exitWhenHelperEnds } from './platform/child-process.js';
import { createLogger } from './platform/logger.js';
import type { EmbeddedEngine } from './platform/temporal/embedded-engine.js';
import { createSandboxClock, type SandboxClock } from './platform/temporal/sandbox-clock.js';
import { installTemporalLogger } from './platform/temporal/runtime.js';
import {
  announceAdminToken,
  connectTemporal,
  createClocks,
  createCoreServices,
  deliveringOnAdvance,
  helperProcesses,
  openCore,
  startConfiguredEngine,
  syncingSandboxClock,
} from './composition/index.js';
import { createWorker, startWorkerLoops } from './composition/worker-process.js';

const config = readConfigOrExit();
const startedAt = performance.now();
/** One plain line per stage on stderr, beside the banner: a start that takes seconds says what it is doing. */
const progress = (what: string) =>
  process.stderr.write(`paygate: ${what} (${((performance.now() - startedAt) / 1000).toFixed(1)} s)\n`);
// before the database, the engine and the worker: a taken PORT / ADMIN_PORT is one line and exit 1 within a second;
// held until the server listens, so none of their sockets is given it meanwhile
const releasePorts = await reservePorts(config).catch(exitIfPortInUse);
// and before any token is made or printed: one npm start per DATA_DIR (its PGlite, engine and sandbox files)
const releaseDataDir = (() => {
  try {
    return lockDataDir(config.dataDir);
  } catch (err) {
    if (!(err instanceof DataDirInUseError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
})();
const logger = createLogger({ level: config.logLevel, format: config.logFormat });
announceAdminToken(config, logger);
let shuttingDown = false;
installTemporalLogger(logger, { metricsBindAddress: config.temporalMetricsAddress, stopping: () => shuttingDown });
if (config.temporalMetricsAddress)
  logger.info({ address: config.temporalMetricsAddress }, 'Temporal SDK metrics exporter listening');

// run in reverse: the directory is released last, once everything writing to it has stopped
const closers: (() => Promise<unknown>)[] = [async () => releaseDataDir(), releasePorts];
const closeAll = async () => {
  shuttingDown = true;
  for (const close of closers.reverse())
    await close().catch((err: unknown) => logger.error({ err }, 'error while shutting down'));
};
let listening: Listening | undefined;
/** A helper process that ends on its own takes the rest down: the shutdown of SIGTERM, then exit 1. */
const watchHelper = (helper: { name: string; exited: Promise<string> }) =>
  exitWhenHelperEnds(helper, {
    logger,
    shuttingDown: () => shuttingDown,
    shutdown: () => (listening ? listening.close() : closeAll()),
  });

try {
  // Sandbox mode on the embedded engine: one advanceable clock for the engine and the durable processes (the business
  // clock: the activities' stamps, the sandbox PGs); real-world time (tokens, keys, webhooks) stays on the wall clock.
  const sandboxClock = config.sandbox && !config.temporalAddress ? createSandboxClock() : undefined;
  const clocks = createClocks(sandboxClock);
  const core = await openCore(config, logger, {
    businessClock: clocks.businessClock,
    onReady: (part) =>
      progress(
        part === 'database'
          ? `database ready (${config.databaseUrl ? 'Postgres at DATABASE_URL' : `PGlite under ${config.dataDir}`})`
          : config.sandbox
            ? 'sandbox gateways ready'
            : 'gateways ready',
      ),
  });
  closers.push(() => core.close());
  for (const helper of helperProcesses(core)) watchHelper(helper);

  let engine: EmbeddedEngine | undefined;
  if (!config.temporalAddress) {
    const engineLog = logger.child({ component: 'temporal-engine' });
    // it answers only calls that present its token (DATA_DIR/engine-token or ENGINE_TOKEN; never logged)
    engine = await startConfiguredEngine(config, {
      clockControl: sandboxClock !== undefined,
      onOutput: (line) => engineLog.debug(line),
    });
    closers.push(() => engine!.stop());
    watchHelper({ name: 'Temporal engine', exited: engine.exited });
    logger.info({ address: engine.address }, 'embedded Temporal engine running');
    progress('Temporal engine ready');
  }
  const temporalAddress = config.temporalAddress ?? engine!.address;
  // the embedded engine's token, presented by every connection to it; the configured cluster's transport otherwise
  const transport = engine ? { transport: engine.transport } : {};
  let clock: SandboxClock | undefined;
  if (sandboxClock) {
    const connected = await sandboxClock.connect(temporalAddress, engine?.transport);
    closers.push(() => connected.close());
    // the sandbox PGs' process learns each new time before the work that follows it
    clock = syncingSandboxClock(connected, core.gateways);
    await core.gateways.syncSandboxClock?.();
  }

  const temporal = await connectTemporal(core, temporalAddress, transport);
  closers.push(() => temporal.close());
  // built once for the API, the worker's activities and the sweeps: over the client, before the worker
  const services = createCoreServices(core, temporal, logger, clocks);

  const worker = await createWorker(core, services, temporalAddress, {
    ...transport,
    clocks,
    ...(clock ? { sandboxClock: clock } : {}),
  });
  closers.push(() => worker.shutdown());
  progress('worker ready (workflow bundle built)');
  worker.run().catch((err: unknown) => {
    logger.fatal({ err }, 'the Temporal worker stopped');
    process.kill(process.pid, 'SIGTERM');
  });
  // the webhook dispatcher (retries wait on the business clock) and the reconcile sweep (it judges each record by the
  // clock that wrote it: call windows business, Idempotency-Keys wall)
  const stopLoops = startWorkerLoops(core, services, logger, clocks);
  closers.push(stopLoops);

  const app = await buildConfiguredApp({
    core,
    logger,
    temporal,
    services,
    readiness: { worker: () => worker.worker.getState() === 'RUNNING' },
    clocks,
    // an advance answers once the webhook retries it made due are sent, as it did when they were workflow timers
    ...(clock ? { sandboxClock: deliveringOnAdvance(clock, services.webhookDispatcher) } : {}),
  });
  await releasePorts();
  listening = await listen(app, config, closeAll);
  progress('API listening');
  // Ctrl-C reaches the whole process group: the engine may end before the shutdown listen() runs has begun (added
  // only now: a listener of its own would keep a signal from ending the process while it starts)
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      shuttingDown = true;
    });
  }
  // for the person at the terminal, once: plain text on stderr, beside the admin token (never in the JSON log)
  process.stderr.write(`${startupBanner(config, listening)}\n`);
} catch (err) {
  if (err instanceof PortInUseError) {
    // taken after the early check: the same hint, after stopping what started
    await closeAll();
    process.stderr.write(`${err.hint}\n`);
    process.exit(1);
  }
  logger.fatal({ err }, 'paygate failed to start');
  await closeAll();
  process.exit(1);
}
