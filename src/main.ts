// `npm start`: everything in one command. The API, the Temporal worker, the database (PGlite under
// DATA_DIR unless DATABASE_URL is set), the sandbox gateways, and — unless TEMPORAL_ADDRESS is set —
// the embedded Temporal-compatible engine, durable under DATA_DIR.
import path from 'node:path';
import { announceAdminToken, buildConfiguredApp, listen, openConfiguredDatabase, startConfiguredGateways } from './api/server.js';
import { createActivities } from './activities/index.js';
import { readConfigOrExit } from './config/index.js';
import { loadKeyring } from './config/keys.js';
import { createLogger } from './logger.js';
import { connectTemporalClient } from './temporal/client.js';
import { startEmbeddedEngine, type EmbeddedEngine } from './temporal/embedded-engine.js';
import { installTemporalLogger } from './temporal/runtime.js';
import { createPaygateWorker } from './temporal/worker.js';

const config = readConfigOrExit();
const logger = createLogger({ level: config.logLevel });
announceAdminToken(config, logger);
installTemporalLogger(logger);

const closers: (() => Promise<unknown>)[] = [];
const closeAll = async () => {
  for (const close of closers.reverse()) await close().catch((err: unknown) => logger.error({ err }, 'error while shutting down'));
};

try {
  const { keyring, source } = await loadKeyring(config);
  if (source === 'data-dir' && config.databaseUrl) {
    logger.warn('ENCRYPTION_KEYS is not set: sealing with a key kept in DATA_DIR; every process sharing this database needs the same key');
  }

  const database = await openConfiguredDatabase(config);
  closers.push(() => database.close());
  const gateways = await startConfiguredGateways(config, logger);
  closers.push(() => gateways.close());

  let engine: EmbeddedEngine | undefined;
  if (!config.temporalAddress) {
    const engineLog = logger.child({ component: 'temporal-engine' });
    engine = await startEmbeddedEngine({
      dataDir: path.resolve(config.dataDir, 'temporal'),
      namespace: config.temporalNamespace,
      onOutput: (line) => engineLog.debug(line),
    });
    closers.push(() => engine!.stop());
    logger.info({ address: engine.address }, 'embedded Temporal engine running');
  }
  const temporalAddress = config.temporalAddress ?? engine!.address;

  const temporal = await connectTemporalClient({ address: temporalAddress, namespace: config.temporalNamespace, keyring });
  closers.push(() => temporal.close());

  const worker = await createPaygateWorker({
    address: temporalAddress,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    keyring,
    activities: createActivities({ db: database.db, gateways: gateways.gateways, keyring }),
  });
  closers.push(() => worker.shutdown());
  worker.run().catch((err: unknown) => {
    logger.fatal({ err }, 'the Temporal worker stopped');
    process.kill(process.pid, 'SIGTERM');
  });

  const app = await buildConfiguredApp({
    config,
    database,
    gateways,
    logger,
    keyring,
    temporal,
    readiness: { worker: () => worker.worker.getState() === 'RUNNING' },
  });
  await listen(app, config, closeAll);
} catch (err) {
  logger.fatal({ err }, 'paygate failed to start');
  await closeAll();
  process.exit(1);
}
