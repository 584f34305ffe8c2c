// What every entry point builds from the configuration: keyring, database, gateways, repositories,
// the Temporal client and the services (the worker process's parts over them: worker-process.ts). Used by `npm start` (src/main.ts), the standalone API
// (src/api/server.ts), the standalone worker (worker.ts) and the admin CLI. Nothing here imports
// Fastify: the worker process never loads the HTTP app.
//
// The order of a process: core (keyring, database, gateways, stores), then the Temporal client, then the
// services over it (it is their workflow runtime), then the activities over the services, then the worker.
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { asyncLocalStorage as activityContext } from '@temporalio/activity';
import { type Config, publicBaseUrlOf } from '../platform/config/index.js';
import { preparePrivateDataDir, usesDataDir } from '../platform/config/data-dir.js';
import { loadEngineToken } from '../platform/config/engine-token.js';
import { loadKeyring } from '../platform/config/keys.js';
import { createGatewayRegistry, type GatewayRegistry } from '../gateways/index.js';
import { entryFile, helperEnvironment, startChild } from '../platform/child-process.js';
import type { Logger } from '../platform/logger.js';
import { createMetrics, type Metrics } from '../platform/observability/metrics.js';
import { observingWorkflowClient } from '../platform/observability/workflow-client.js';
import type { Keyring } from '../platform/security/keyring.js';
import { openDatabase, type Database } from '../platform/db/db.js';
import { type OperationLog, pinoStyleLog } from '../platform/operation-log.js';
import { type Clocks, wallClock } from '../platform/time.js';
import { createServices, type ServiceDeps, type Services } from './services.js';
import { createStores, type Stores } from './stores.js';
import { countPendingDeliveries, type DeliveryDispatcher } from '../webhooks/index.js';
import { connectTemporalClient, type TemporalClient } from '../platform/temporal/client.js';
import { type EmbeddedEngine, startEmbeddedEngine } from '../platform/temporal/embedded-engine.js';
import type { SandboxClock } from '../platform/temporal/sandbox-clock.js';
import type { TemporalTransport } from '../platform/temporal/transport.js';
import { type CircuitSettings, createProviderClient, DEFAULT_CIRCUIT_SETTINGS, type ProviderClient } from '../upstream/index.js';
import { DEFAULT_SEND_LIMITS, type SendLimits } from '../verification/send-limit-rules.js';

/**
 * The process's two clocks, built once here and handed to each use by name (src/platform/time.ts): the wall clock,
 * and the business clock, which is the sandbox clock's `now` when the embedded engine runs with one (npm start in
 * sandbox mode) and the wall clock otherwise. Only the durable processes' time follows an advance.
 */
export function createClocks(sandboxClock?: Pick<SandboxClock, 'now'>): Clocks {
  return { wallClock, businessClock: sandboxClock ? sandboxClock.now : wallClock };
}

/**
 * Opens the database the config names: a Postgres server, or PGlite under DATA_DIR in a process of its own (its
 * WebAssembly Postgres off this process's event loop), reached with node-postgres as a server is. `inProcess`:
 * PGlite in this process instead (the admin CLI's --direct: one short command while the server is stopped).
 */
export function openConfiguredDatabase(config: Config, opts: { inProcess?: boolean } = {}): Promise<Database> {
  return config.databaseUrl
    ? openDatabase({ databaseUrl: config.databaseUrl })
    : openDatabase({ dataDir: resolve(config.dataDir, 'pglite'), ownProcess: opts.inProcess !== true });
}

export interface ConfiguredGateways {
  readonly gateways: GatewayRegistry;
  /** the transport to the upstream providers projects name (src/upstream), in every mode */
  readonly providers: ProviderClient;
  readonly sandboxUrl?: string;
  /** the Bearer token of the sandbox's internal routes (SMS inbox) */
  readonly sandboxToken?: string;
  /**
   * A sandbox of its own (SANDBOX_GATEWAY_URL) answers its GET /health: the API's readiness probe, so an API in
   * sandbox mode whose sandbox is not there (not started, wrong address) says so at /health. Absent otherwise.
   */
  readonly sandboxReady?: () => Promise<boolean>;
  /** the sandbox PGs' process, when they run in one (`ownProcess`): its pid, and its end, which its parent watches */
  readonly sandboxProcess?: { readonly pid: number; readonly exited: Promise<string> };
  /**
   * Brings the sandbox PGs' process to the business clock's time when it moved (the embedded stack's sandbox clock):
   * resolves once the process has it. Absent when the PGs read the clock themselves (in this process) or run elsewhere.
   */
  readonly syncSandboxClock?: () => Promise<void>;
  close(): Promise<void>;
}

/** How long the readiness probe of a standalone sandbox waits for its GET /health. */
const SANDBOX_HEALTH_TIMEOUT_MS = 1_500;

/**
 * The sandbox gateways (served on loopback) when sandbox mode is on, otherwise no local gateways; and in every mode
 * the transport to upstream providers. `businessClock`: the sandbox PGs' time (they follow the sandbox clock: OTP
 * sessions, approvals, escrow dates); their notifications are signed and checked on the wall clock. `ownProcess`:
 * the PGs run in a process of their own (npm start: src/sandbox/child-main.ts), else in this one.
 */
export async function startConfiguredGateways(
  config: Config,
  logger: Logger,
  businessClock?: () => Date,
  opts: { ownProcess?: boolean } = {},
): Promise<ConfiguredGateways> {
  const providers = createProviderClient({ policy: { sandbox: config.sandbox }, deadlines: config.upstreamDeadlines });
  try {
    const local = await startLocalGateways(config, logger, businessClock, opts.ownProcess === true);
    return {
      ...local,
      providers,
      async close() {
        await local.close();
        await providers.close();
      },
    };
  } catch (err) {
    await providers.close();
    throw err;
  }
}

async function startLocalGateways(
  config: Config,
  logger: Logger,
  businessClock: (() => Date) | undefined,
  ownProcess: boolean,
): Promise<Omit<ConfiguredGateways, 'providers'>> {
  if (!config.sandbox) {
    return { gateways: { get: () => undefined, names: [] }, close: async () => undefined };
  }
  if (config.sandboxGatewayUrl) {
    // a sandbox server of its own (split deployments: API and worker must see the same sandbox)
    const registry = createGatewayRegistry({
      sandboxUrl: config.sandboxGatewayUrl,
      ...(config.sandboxToken ? { sandboxToken: config.sandboxToken } : {}),
    });
    if (!config.sandboxToken) {
      logger.warn(
        'SANDBOX_TOKEN is not set: the sandbox SMS inbox (GET /sandbox/v1/sms) cannot be read from SANDBOX_GATEWAY_URL',
      );
    }
    const healthUrl = new URL('/health', config.sandboxGatewayUrl);
    return {
      gateways: registry,
      sandboxUrl: config.sandboxGatewayUrl,
      ...(config.sandboxToken ? { sandboxToken: config.sandboxToken } : {}),
      sandboxReady: () =>
        fetch(healthUrl, { signal: AbortSignal.timeout(SANDBOX_HEALTH_TIMEOUT_MS) }).then(
          async (res) => {
            await res.arrayBuffer();
            return res.ok;
          },
          () => false,
        ),
      close: () => registry.close(),
    };
  }
  if (ownProcess) return startSandboxProcess(config, businessClock);
  // Loaded only here: the fake PGs are an HTTP server of their own, not part of paygate's processes.
  const { startSandboxGateways } = await import('../sandbox/server.js');
  const { loadSandboxSecret } = await import('../sandbox/secret.js');
  // Neither is ever a constant: the secret persists in DATA_DIR (keys and CIs survive restarts), the
  // token of the internal routes lives as long as this process unless SANDBOX_TOKEN fixes one.
  const { secret } = await loadSandboxSecret({ secret: config.sandboxSecret, dataDir: config.dataDir });
  const token = config.sandboxToken ?? randomBytes(32).toString('base64url');
  const sandbox = await startSandboxGateways({
    host: '127.0.0.1',
    port: 0,
    secret,
    token,
    logger: logger.child({ component: 'sandbox-pg' }),
    ...(businessClock ? { clock: businessClock } : {}),
    // its state survives a restart of npm start (src/sandbox/state-journal.ts)
    stateDir: resolve(config.dataDir, 'sandbox-state'),
  });
  const registry = createGatewayRegistry({ sandboxUrl: sandbox.url, sandboxToken: token });
  return {
    gateways: registry,
    sandboxUrl: sandbox.url,
    sandboxToken: sandbox.token,
    async close() {
      await registry.close();
      await sandbox.close();
    },
  };
}

/** The sandbox clock's offset may differ this much from what the sandbox process has before it is told again. */
const CLOCK_SYNC_TOLERANCE_MS = 1;

/**
 * The sandbox PGs in a process of their own (src/sandbox/child-main.ts), on loopback, with the same secret, state
 * journal and token rule as in process. With a business clock, `syncSandboxClock` tells the process the clock's
 * offset from the wall clock whenever it changed.
 */
async function startSandboxProcess(
  config: Config,
  businessClock: (() => Date) | undefined,
): Promise<Omit<ConfiguredGateways, 'providers'>> {
  // the token of the internal routes lives as long as this process unless SANDBOX_TOKEN fixes one
  const token = config.sandboxToken ?? randomBytes(32).toString('base64url');
  const child = await startChild<{ url: string }>({
    name: 'paygate sandbox PGs',
    entry: entryFile(import.meta.url, '../sandbox/child-main'),
    env: helperEnvironment({
      DATA_DIR: resolve(config.dataDir),
      SANDBOX_TOKEN: token,
      LOG_LEVEL: config.logLevel,
      ...(config.logFormat ? { LOG_FORMAT: config.logFormat } : {}),
      ...(config.sandboxSecret ? { SANDBOX_SECRET: config.sandboxSecret } : {}),
    }),
  });
  const registry = createGatewayRegistry({ sandboxUrl: child.ready.url, sandboxToken: token });
  let told = 0;
  const syncSandboxClock = businessClock
    ? async () => {
        const offsetMs = businessClock().getTime() - Date.now();
        if (Math.abs(offsetMs - told) <= CLOCK_SYNC_TOLERANCE_MS) return;
        told = offsetMs;
        await child.request({ offsetMs });
      }
    : undefined;
  return {
    gateways: registry,
    sandboxUrl: child.ready.url,
    sandboxToken: token,
    sandboxProcess: { pid: child.pid, exited: child.exited },
    ...(syncSandboxClock ? { syncSandboxClock } : {}),
    async close() {
      await registry.close();
      await child.stop();
    },
  };
}

/**
 * The sandbox clock as the app and the worker use it, when the sandbox PGs run in a process of their own: every
 * read and advance returns once that process has the new time too (the activities wait for it: createWorker).
 */
export function syncingSandboxClock<T extends SandboxClock>(clock: T, gateways: ConfiguredGateways): T {
  const sync = gateways.syncSandboxClock;
  if (!sync) return clock;
  return {
    ...clock,
    async read() {
      const now = await clock.read();
      await sync();
      return now;
    },
    async advance(target, waitMs) {
      const advanced = await clock.advance(target, waitMs);
      await sync();
      return advanced;
    },
  };
}

/**
 * The sandbox clock as the app advances it: after the engine's advance, the webhook retries it made due are sent
 * before the advance answers (they wait on rows, not on the engine's timers, since deliveries stopped being workflows).
 */
export function deliveringOnAdvance<T extends SandboxClock>(clock: T, dispatcher: Pick<DeliveryDispatcher, 'runDue'>): T {
  return {
    ...clock,
    async advance(target, waitMs) {
      const advanced = await clock.advance(target, waitMs);
      await dispatcher.runDue();
      return advanced;
    },
  };
}

/**
 * Prints a generated ADMIN_TOKEN once, to the terminal (stderr), never into the JSON log: logs are
 * shipped and kept; the log only says that a token was generated.
 */
export function announceAdminToken(
  config: Config,
  logger: Logger,
  terminal: { write(text: string): unknown } = process.stderr,
): void {
  if (config.adminTokenGenerated) {
    terminal.write(`paygate: ADMIN_TOKEN is not set; generated for this run: ${config.adminToken}\n`);
    // a laptop's sandbox (npm start): expected, not a warning; a server of a deployment (production, or a sandbox
    // forced onto a database or cluster) without a lasting token is one
    logger[config.sandbox && !config.sandboxForced ? 'info' : 'warn'](
      'ADMIN_TOKEN is not set: a token was generated for this run and printed to stderr (set ADMIN_TOKEN to keep one)',
    );
  }
}

/** Loud warnings about settings that are legal but unsafe in production. */
export function warnAboutUnsafeSettings(config: Config, logger: Logger): void {
  if (config.sandboxForced) {
    logger.warn(
      'PAYGATE_SANDBOX=true with DATABASE_URL or TEMPORAL_ADDRESS set: SANDBOX GATEWAYS ARE SERVED, charges are not real. Never run production like this.',
    );
  }
}

/** TLS / mTLS / API key towards the Temporal frontend, as configured. */
/** How this process reaches the configured Temporal cluster (TEMPORAL_TLS_*, TEMPORAL_API_KEY). */
export function temporalTransport(config: Config): TemporalTransport {
  return {
    ...(config.temporalTls ? { tls: config.temporalTls } : {}),
    ...(config.temporalApiKey ? { apiKey: config.temporalApiKey } : {}),
  };
}

/**
 * The embedded engine of `npm start` (no TEMPORAL_ADDRESS): its journal under DATA_DIR/temporal, its token from
 * ENGINE_TOKEN or DATA_DIR/engine-token (generated once, 0600). Everything that connects to it passes its
 * `transport` (connectTemporal, createWorker, the sandbox clock's connect), which presents the token.
 */
export async function startConfiguredEngine(
  config: Config,
  opts: { clockControl?: boolean; onOutput?: (line: string) => void } = {},
): Promise<EmbeddedEngine> {
  const { token } = await loadEngineToken(config);
  return startEmbeddedEngine({
    dataDir: resolve(config.dataDir, 'temporal'),
    namespace: config.temporalNamespace,
    token,
    ...(opts.clockControl ? { clockControl: true } : {}),
    ...(opts.onOutput ? { onOutput: opts.onOutput } : {}),
  });
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
