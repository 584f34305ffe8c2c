// The Temporal worker as a process of its own (production): runs paygate's workflows and activities
// against TEMPORAL_ADDRESS. `npm start` (src/main.ts) runs the same worker in-process instead.
import closeWithGrace from 'close-with-grace';
import { exitWhenHelperEnds } from './src/platform/child-process.js';
import { readConfigOrExit } from './src/platform/config/index.js';
import { createLogger } from './src/platform/logger.js';
import { startMetricsListener } from './src/platform/observability/metrics-listener.js';
import { installTemporalLogger } from './src/platform/temporal/runtime.js';
import { announceAdminToken, connectTemporal, createCoreServices, helperProcesses, openCore } from './src/composition/index.js';
import { createWorker, startWorkerLoops } from './src/composition/worker-process.js';

const config = readConfigOrExit();
const logger = createLogger({ level: config.logLevel, format: config.logFormat }).child({ component: 'worker' });
if (!config.temporalAddress) {
  logger.fatal('TEMPORAL_ADDRESS is not set: the standalone worker needs a Temporal server (npm start embeds one)');
  process.exit(1);
}
let closing = false;
installTemporalLogger(logger, { metricsBindAddress: config.temporalMetricsAddress, stopping: () => closing });
if (config.temporalMetricsAddress)
  logger.info({ address: config.temporalMetricsAddress }, 'Temporal SDK metrics exporter listening');

const core = await openCore(config, logger);
// on PGlite the database (and the sandbox PGs) run in processes of this one: when one dies, so does the worker
let stopWork: (() => Promise<void>) | undefined;
for (const helper of helperProcesses(core))
  exitWhenHelperEnds(helper, { logger, shuttingDown: () => closing, shutdown: () => (stopWork ? stopWork() : core.close()) });
// webhook attempts, schedule and reserve charges happen in this process: its own registry gets a listener
let metricsListener: Awaited<ReturnType<typeof startMetricsListener>> | undefined;
if (config.workerMetrics) {
  announceAdminToken(config, logger);
  metricsListener = await startMetricsListener({ ...config.workerMetrics, adminToken: config.adminToken, metrics: core.metrics });
  logger.info({ address: metricsListener.address }, 'worker metrics listening (GET /metrics, admin token)');
}
// the client first: it is the workflow runtime of the services the activities call, built once, before the worker
const temporal = await connectTemporal(core, config.temporalAddress);
const services = createCoreServices(core, temporal, logger);
const worker = await createWorker(core, services, config.temporalAddress);
// the webhook dispatcher (it sends every delivery, the API processes' too) and the reconcile sweep
const stopLoops = startWorkerLoops(core, services, logger);
stopWork = async () => {
  await stopLoops();
  await worker.shutdown();
};

closeWithGrace({ delay: 30_000 }, async ({ signal, err }) => {
  closing = true;
  if (err) logger.error({ err }, 'worker shutting down after a fatal error');
  else logger.info({ signal }, 'worker shutting down');
  await stopLoops();
  await worker.shutdown();
  await metricsListener?.close();
});

logger.info({ taskQueue: config.taskQueue, address: config.temporalAddress }, 'worker running');
try {
  await worker.run();
} finally {
  closing = true;
  await stopLoops();
  await temporal.close();
  await core.close();
}
