// Process start-up for the composition root: the database (a server, or PGlite in its own process), the sandbox PGs
// (in the process or in their own, following the sandbox clock), the embedded engine and its transport, and what a
// start says (the generated admin token, unsafe settings). The core (index.ts) opens these in order.
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import type { Config } from '../platform/config/index.js';
import { loadEngineToken } from '../platform/config/engine-token.js';
import { createGatewayRegistry, type GatewayRegistry } from '../gateways/index.js';
import { entryFile, helperEnvironment, startChild } from '../platform/child-process.js';
import type { Logger } from '../platform/logger.js';
import { openDatabase, type Database } from '../platform/db/db.js';
import type { DeliveryDispatcher } from '../webhooks/index.js';
import { type EmbeddedEngine, startEmbeddedEngine } from '../platform/temporal/embedded-engine.js';
import type { SandboxClock } from '../platform/temporal/sandbox-clock.js';
import type { TemporalTransport } from '../platform/temporal/transport.js';
import { createProviderClient, type ProviderClient } from '../upstream/index.js';

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
