// What every entry point builds from the configuration: keyring, database, gateways, repositories,
// the Temporal client and the services (the worker process's parts over them: worker-process.ts; the start-up of the
// processes it needs beside it, the database, the sandbox PGs and the engine: start-up.ts). Used by `npm start`
// (src/main.ts), the standalone API (src/api/server.ts), the standalone worker (worker.ts) and the admin CLI. Nothing
// here imports Fastify: the worker process never loads the HTTP app.
//
// The order of a process: core (keyring, database, gateways, stores), then the Temporal client, then the
// services over it (it is their workflow runtime), then the activities over the services, then the worker.
import { asyncLocalStorage as activityContext } from '@temporalio/activity';
import { type Config, publicBaseUrlOf } from '../platform/config/index.js';
import { preparePrivateDataDir, usesDataDir } from '../platform/config/data-dir.js';
import { loadKeyring } from '../platform/config/keys.js';
import type { GatewayRegistry } from '../gateways/index.js';
import type { Logger } from '../platform/logger.js';
import { createMetrics, type Metrics } from '../platform/observability/metrics.js';
import { observingWorkflowClient } from '../platform/observability/workflow-client.js';
import type { Keyring } from '../platform/security/keyring.js';
import type { Database } from '../platform/db/db.js';
import { type OperationLog, pinoStyleLog } from '../platform/operation-log.js';
import { type Clocks, wallClock } from '../platform/time.js';
import { createServices, type ServiceDeps, type Services } from './services.js';
import { createStores, type Stores } from './stores.js';
import { countPendingDeliveries } from '../webhooks/index.js';
import { connectTemporalClient, type TemporalClient } from '../platform/temporal/client.js';
import type { SandboxClock } from '../platform/temporal/sandbox-clock.js';
import type { TemporalTransport } from '../platform/temporal/transport.js';
import { type CircuitSettings, DEFAULT_CIRCUIT_SETTINGS } from '../upstream/index.js';
import { DEFAULT_SEND_LIMITS, type SendLimits } from '../verification/send-limit-rules.js';

import {
  openConfiguredDatabase,
  startConfiguredGateways,
  temporalTransport,
  warnAboutUnsafeSettings,
  type ConfiguredGateways,
} from './start-up.js';

export * from './start-up.js';
/**
 * The process's two clocks, built once here and handed to each use by name (src/platform/time.ts): the wall clock,
 * and the business clock, which is the sandbox clock's `now` when the embedded engine runs with one (npm start in
 * sandbox mode) and the wall clock otherwise. Only the durable processes' time follows an advance.
 */
export function createClocks(sandboxClock?: Pick<SandboxClock, 'now'>): Clocks {
  return { wallClock, businessClock: sandboxClock ? sandboxClock.now : wallClock };
}

/** The parts every process shares: keyring, database, gateways and the repositories over them. */
export interface Core {
  readonly config: Config;
  readonly keyring: Keyring;
  readonly database: Database;
  readonly gateways: ConfiguredGateways;
  readonly stores: Stores;
  /** the process's one metrics registry: its API, services and activities count into it (openCore makes it) */
  readonly metrics?: Metrics;
  /** the process's logger (the workflow bundler reports to it) */
  readonly logger?: Logger;
  /** closes the gateways, then the database */
  close(): Promise<void>;
}

/**
 * `businessClock`: the sandbox clock of the embedded stack (the sandbox PGs follow it). The database (PGlite) and
 * the local sandbox PGs run in processes of their own, which end with this one (src/platform/child-process.ts).
 */
export async function openCore(
  config: Config,
  logger: Logger,
  opts: {
    businessClock?: () => Date;
    /** told as each part is ready (`npm start`'s progress lines) */
    onReady?: (part: 'database' | 'gateways') => void;
  } = {},
): Promise<Core & Required<Pick<Core, 'metrics' | 'logger'>>> {
  warnAboutUnsafeSettings(config, logger);
  if (usesDataDir(config)) {
    const warning = await preparePrivateDataDir(config.dataDir);
    if (warning) logger.warn(warning);
  }
  const { keyring, source } = await loadKeyring(config);
  if (source === 'data-dir' && config.databaseUrl) {
    logger.warn(
      'ENCRYPTION_KEYS is not set: sealing with a key kept in DATA_DIR; every process sharing this database needs the same key',
    );
  }
  const database = await openConfiguredDatabase(config);
  opts.onReady?.('database');
  let gateways: ConfiguredGateways;
  try {
    gateways = await startConfiguredGateways(config, logger, opts.businessClock, { ownProcess: true });
    opts.onReady?.('gateways');
  } catch (err) {
    await database.close();
    throw err;
  }
  const metrics = createMetrics();
  metrics.readPendingDeliveriesFrom(() => countPendingDeliveries(database.db));
  return {
    config,
    keyring,
    database,
    gateways,
    stores: createStores(database.db, keyring),
    metrics,
    logger,
    async close() {
      await gateways.close();
      await database.close();
    },
  };
}

/** The helper processes openCore started (PGlite's database process, the sandbox PGs' process), by name. */
export function helperProcesses(core: Core): { readonly name: string; readonly exited: Promise<string> }[] {
  return [
    ...(core.database.process ? [{ name: 'database', exited: core.database.process.exited }] : []),
    ...(core.gateways.sandboxProcess ? [{ name: 'sandbox PGs', exited: core.gateways.sandboxProcess.exited }] : []),
  ];
}

/**
 * The services' logger: while an activity runs, the activity's own logger (a use case an activity calls logs
 * there, with the activity's ids, as when each activity built its own services); everywhere else the process's.
 */
function activityOrProcessLog(logger: Pick<Logger, 'warn' | 'error'>): Pick<OperationLog, 'warn'> & {
  readonly error: OperationLog['warn'];
} {
  const current = (): Pick<Logger, 'warn' | 'error'> => {
    const activityLog = activityContext.getStore()?.log;
    return activityLog ? (pinoStyleLog(activityLog) as unknown as Pick<Logger, 'warn' | 'error'>) : logger;
  };
  return {
    warn: (obj: unknown, msg?: string, ...args: unknown[]) => current().warn(obj, msg, ...args),
    error: (obj: unknown, msg?: string, ...args: unknown[]) => current().error(obj, msg, ...args),
  };
}

/** What a process's services are built from: named as the app's deps (src/api/app.ts), so an app's deps build its services. */
export interface ServiceParts {
  readonly config: Pick<Config, 'sandbox' | 'publicBaseUrl' | 'port' | 'verificationSendLimits' | 'upstreamCircuit'>;
  readonly stores: Stores;
  readonly gateways: GatewayRegistry;
  readonly logger: Pick<Logger, 'warn' | 'error'>;
  /** the process's one registry: the API's use cases and the worker's activities count into it */
  readonly metrics?: Metrics;
  /** real-world time (Clocks.wallClock): tokens, keys, webhooks, idempotency; the host's clock when absent */
  readonly wallClock?: () => Date;
  /** the durable processes' time (Clocks.businessClock): the sandbox clock when one runs; the wall clock when absent */
  readonly businessClock?: () => Date;
  /** where workflows run (the process's Temporal client and task queue); without it their use cases answer 9503 */
  readonly temporal?: ServiceDeps['workflows'];
  readonly workflowCallTimeoutMs?: number;
  /** the sandbox gateways' address and internal-route token (SMS inbox, faults): used in sandbox mode only */
  readonly sandboxUrl?: string;
  readonly sandboxToken?: string;
  /** the DNS lookup of the webhook URL check at save (tests inject one) */
  readonly webhookResolve?: ServiceDeps['webhookResolve'];
  /** how the webhook dispatcher's attempts connect (tests inject a resolver, a short timeout) */
  readonly webhookAttempts?: ServiceDeps['webhookAttempts'];
  /** the transport to upstream providers (ConfiguredGateways.providers) */
  readonly providers?: ServiceDeps['providers'];
  /** the database's LISTEN/NOTIFY (Database.notifications: Postgres only) */
  readonly databaseNotifications?: ServiceDeps['databaseNotifications'];
}

/** {base_url} as the outside world reaches this process (src/platform/config). */
export { publicBaseUrlOf };

/**
 * The process's use cases, built once: the app's routes and dashboard get them through its deps, the worker's
 * activities through createActivities, the loops from startWorkerLoops. Build the Temporal client first.
 */
export function buildServices(parts: ServiceParts): Services {
  const { config } = parts;
  const wall = parts.wallClock ?? wallClock;
  return createServices({
    stores: parts.stores,
    gateways: parts.gateways,
    wallClock: wall,
    businessClock: parts.businessClock ?? wall,
    sandbox: config.sandbox,
    ...(parts.temporal ? { workflows: parts.temporal } : {}),
    ...(parts.workflowCallTimeoutMs !== undefined ? { workflowCallTimeoutMs: parts.workflowCallTimeoutMs } : {}),
    ...(config.sandbox && parts.sandboxUrl ? { sandboxUrl: parts.sandboxUrl } : {}),
    ...(config.sandbox && parts.sandboxToken ? { sandboxToken: parts.sandboxToken } : {}),
    ...(parts.webhookResolve ? { webhookResolve: parts.webhookResolve } : {}),
    ...(parts.webhookAttempts ? { webhookAttempts: parts.webhookAttempts } : {}),
    publicBaseUrl: publicBaseUrlOf(config),
    logger: activityOrProcessLog(parts.logger),
    ...(parts.providers ? { providers: parts.providers } : {}),
    ...(parts.metrics ? { metrics: parts.metrics } : {}),
    verificationSendLimits: sendLimitsOf(config),
    upstreamCircuit: circuitSettingsOf(config),
    ...(parts.databaseNotifications ? { databaseNotifications: parts.databaseNotifications } : {}),
  });
}

/** UPSTREAM_CIRCUIT_FAILURES / _OPEN_SECONDS, each the upstream area's default when unset. */
export function circuitSettingsOf(config: Pick<Config, 'upstreamCircuit'>): CircuitSettings {
  const { failures, openSeconds } = config.upstreamCircuit;
  return {
    failures: failures ?? DEFAULT_CIRCUIT_SETTINGS.failures,
    openMs: openSeconds === undefined ? DEFAULT_CIRCUIT_SETTINGS.openMs : openSeconds * 1000,
  };
}

/** VERIFICATION_SEND_LIMITS_PER_PHONE / _PER_PROJECT, each the verification area's default when unset. */
export function sendLimitsOf(config: Pick<Config, 'verificationSendLimits'>): SendLimits {
  return {
    perPhone: config.verificationSendLimits.perPhone ?? DEFAULT_SEND_LIMITS.perPhone,
    perProject: config.verificationSendLimits.perProject ?? DEFAULT_SEND_LIMITS.perProject,
  };
}

/** The services of an entry point over its core and Temporal client, on the process's clocks (createClocks). */
export function createCoreServices(
  core: Core,
  temporal: TemporalClient,
  logger: Logger,
  clocks: Clocks = createClocks(),
): Services {
  return buildServices({
    config: core.config,
    stores: core.stores,
    gateways: core.gateways.gateways,
    logger,
    ...(core.metrics ? { metrics: core.metrics } : {}),
    wallClock: clocks.wallClock,
    businessClock: clocks.businessClock,
    temporal: { client: temporal.client, taskQueue: core.config.taskQueue },
    ...(core.gateways.sandboxUrl ? { sandboxUrl: core.gateways.sandboxUrl } : {}),
    ...(core.gateways.sandboxToken ? { sandboxToken: core.gateways.sandboxToken } : {}),
    providers: core.gateways.providers,
    ...(core.database.notifications ? { databaseNotifications: core.database.notifications } : {}),
  });
}

/**
 * The admin CLI's --direct mode: the configured keyring and database, and the services over them. No gateways
 * (only the names of `knownPgs`, which projects may be given) and no workflow engine: the webhook service only
 * stores URLs and secrets for the project service.
 */
export async function openDirectServices(
  config: Config,
  knownPgs: readonly string[],
): Promise<{ readonly services: Services; close(): Promise<void> }> {
  const { keyring } = await loadKeyring(config);
  const database = await openConfiguredDatabase(config, { inProcess: true });
  return {
    services: createServices({
      stores: createStores(database.db, keyring),
      gateways: { get: () => undefined, names: knownPgs },
      wallClock,
      businessClock: wallClock,
      sandbox: config.sandbox,
      publicBaseUrl: publicBaseUrlOf(config),
      verificationSendLimits: sendLimitsOf(config),
    }),
    close: () => database.close(),
  };
}

/**
 * The client the API uses to start and drive workflows, with paygate's payload codec. `transport`: the embedded
 * engine's (EmbeddedEngine.transport); the configured cluster's (TEMPORAL_TLS_*, TEMPORAL_API_KEY) otherwise.
 */
export function connectTemporal(
  core: Core,
  address: string,
  opts: { transport?: TemporalTransport } = {},
): Promise<TemporalClient> {
  return connectTemporalClient({
    address,
    namespace: core.config.temporalNamespace,
    keyring: core.keyring,
    transport: opts.transport ?? temporalTransport(core.config),
    interceptors: [observingWorkflowClient(core.metrics)],
  });
}
