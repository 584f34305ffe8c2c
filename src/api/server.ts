// Listening: explicit timeouts (set in buildApp), graceful shutdown with close-with-grace.
// Run directly (`npm run api`) it serves the API alone against TEMPORAL_ADDRESS: database from the
// config, sandbox gateways in-process or at SANDBOX_GATEWAY_URL. src/main.ts embeds engine and worker.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import { readConfigOrExit, type Config } from '../config/index.js';
import { createGatewayRegistry } from '../gateways/registry.js';
import { startSandboxGateways } from '../sandbox/server.js';
import type { GatewayRegistry } from '../gateways/types.js';
import { createLogger, type Logger } from '../logger.js';
import { openDatabase, type Database } from '../store/db.js';
import { loadKeyring } from '../config/keys.js';
import type { Keyring } from '../security/keyring.js';
import { connectTemporalClient, type TemporalClient } from '../temporal/client.js';
import { buildApp, type ReadinessProbe } from './app.js';

const SHUTDOWN_GRACE_MS = 10_000;

/** Opens the database the config names: a Postgres server, or PGlite under DATA_DIR. */
export function openConfiguredDatabase(config: Config): Promise<Database> {
  return config.databaseUrl ? openDatabase({ databaseUrl: config.databaseUrl }) : openDatabase({ dataDir: resolve(config.dataDir, 'pglite') });
}

export interface ConfiguredGateways {
  readonly gateways: GatewayRegistry;
  readonly sandboxUrl?: string;
  close(): Promise<void>;
}

/** The sandbox gateways (served on loopback) when sandbox mode is on; otherwise no gateways. */
export async function startConfiguredGateways(
  config: Config,
  logger: Logger,
): Promise<ConfiguredGateways> {
  if (!config.sandbox) {
    return { gateways: { get: () => undefined, names: [] }, close: async () => undefined };
  }
  if (config.sandboxGatewayUrl) {
    // a sandbox server of its own (split deployments: API and worker must see the same sandbox)
    const registry = createGatewayRegistry({ sandboxUrl: config.sandboxGatewayUrl });
    return { gateways: registry, sandboxUrl: config.sandboxGatewayUrl, close: () => registry.close() };
  }
  const sandbox = await startSandboxGateways({ host: '127.0.0.1', port: 0, logger: logger.child({ component: 'sandbox-pg' }) });
  const registry = createGatewayRegistry({ sandboxUrl: sandbox.url });
  return {
    gateways: registry,
    sandboxUrl: sandbox.url,
    async close() {
      await registry.close();
      await sandbox.close();
    },
  };
}

/** Prints the generated ADMIN_TOKEN once; it is the only secret ever written to the log. */
export function announceAdminToken(config: Config, logger: Logger): void {
  if (config.adminTokenGenerated) {
    logger.warn(`ADMIN_TOKEN is not set; generated for this run: ${config.adminToken} (set ADMIN_TOKEN to keep one)`);
  }
}

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
  config: Config;
  database: Database;
  gateways: ConfiguredGateways;
  logger: Logger;
  keyring: Keyring;
  temporal: TemporalClient;
  readiness?: Readonly<Record<string, ReadinessProbe>>;
}): Promise<FastifyInstance> {
  const { config, temporal } = parts;
  return buildApp({
    config,
    database: parts.database,
    gateways: parts.gateways.gateways,
    logger: parts.logger,
    keyring: parts.keyring,
    temporal: { client: temporal.client, taskQueue: config.taskQueue },
    ...(parts.gateways.sandboxUrl ? { sandboxUrl: parts.gateways.sandboxUrl } : {}),
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
  const { keyring } = await loadKeyring(config);
  const database = await openConfiguredDatabase(config);
  const gateways = await startConfiguredGateways(config, logger);
  const temporal = await connectTemporalClient({ address: config.temporalAddress, namespace: config.temporalNamespace, keyring });
  const app = await buildConfiguredApp({ config, database, gateways, logger, keyring, temporal });
  await listen(app, config, async () => {
    await temporal.close();
    await gateways.close();
    await database.close();
  });
  return app;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  await startApiServer();
}
