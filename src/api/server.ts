// Listening: explicit timeouts (set in buildApp), graceful shutdown with close-with-grace.
// Run directly (`npm run api`) it serves the API alone against TEMPORAL_ADDRESS: database from the
// config, sandbox gateways in-process or at SANDBOX_GATEWAY_URL. src/main.ts embeds engine and worker.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import { readConfigOrExit, type Config } from '../config/index.js';
import { createLogger, type Logger } from '../logger.js';
import type { TemporalClient } from '../temporal/client.js';
import { announceAdminToken, connectTemporal, openCore, type Core } from '../wiring.js';
import { buildApp, type ReadinessProbe } from './app.js';

const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Listens and installs graceful shutdown: on SIGINT/SIGTERM or a fatal error the server stops
 * accepting, finishes in-flight requests, then runs `onClose` (database, gateways, ...).
 */
export async function listen(
  app: FastifyInstance,
  config: Pick<Config, 'host' | 'port'>,
  onClose: () => Promise<void> = async () => undefined,
): Promise<string> {
  closeWithGrace({ delay: SHUTDOWN_GRACE_MS }, async ({ err, signal }) => {
    if (err) app.log.error({ err }, 'shutting down after a fatal error');
    else app.log.info({ signal }, 'shutting down');
    await app.close();
    await onClose();
  });
  const address = await app.listen({ host: config.host, port: config.port });
  app.log.info({ address }, 'paygate API listening');
  return address;
}

/** The app as both entry points build it: configured storage, gateways, keyring and Temporal client. */
export function buildConfiguredApp(parts: {
  core: Core;
  logger: Logger;
  temporal: TemporalClient;
  readiness?: Readonly<Record<string, ReadinessProbe>>;
}): Promise<FastifyInstance> {
  const { core, temporal } = parts;
  return buildApp({
    config: core.config,
    database: core.database,
    gateways: core.gateways.gateways,
    logger: parts.logger,
    keyring: core.keyring,
    temporal: { client: temporal.client, taskQueue: core.config.taskQueue },
    ...(core.gateways.sandboxUrl ? { sandboxUrl: core.gateways.sandboxUrl } : {}),
    ...(core.gateways.sandboxToken ? { sandboxToken: core.gateways.sandboxToken } : {}),
    readiness: {
      temporal: async () => {
        await temporal.client.connection.workflowService.getSystemInfo({});
      },
      ...parts.readiness,
    },
  });
}

/**
 * The API as a process of its own (production): a Temporal cluster at TEMPORAL_ADDRESS runs the
 * workflows, with `worker.ts` beside it. `npm start` (src/main.ts) embeds everything instead.
 */
export async function startApiServer(): Promise<FastifyInstance> {
  const config = readConfigOrExit();
  const logger = createLogger({ level: config.logLevel });
  if (!config.temporalAddress) {
    logger.fatal('TEMPORAL_ADDRESS is not set: the standalone API needs a Temporal server (npm start embeds one)');
    process.exit(1);
  }
  announceAdminToken(config, logger);
  const core = await openCore(config, logger);
  const temporal = await connectTemporal(core, config.temporalAddress);
  const app = await buildConfiguredApp({ core, logger, temporal });
  await listen(app, config, async () => {
    await temporal.close();
    await core.close();
  });
  return app;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  await startApiServer();
}
