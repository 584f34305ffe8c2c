// Listening: explicit timeouts (set in buildApp), graceful shutdown with close-with-grace.
// Run directly (`npm run api`) it serves the API alone against TEMPORAL_ADDRESS: database from the
// config, sandbox gateways in-process or at SANDBOX_GATEWAY_URL. src/main.ts embeds engine and worker.
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import { readConfigOrExit, type Config } from '../platform/config/index.js';
import { createLogger, type Logger } from '../platform/logger.js';
import type { TemporalClient } from '../platform/temporal/client.js';
import type { SandboxClock } from '../platform/temporal/sandbox-clock.js';
import type { Clocks } from '../platform/time.js';
import {
  announceAdminToken,
  connectTemporal,
  createCoreServices,
  helperProcesses,
  openCore,
  type Core,
} from '../composition/index.js';
import { exitWhenHelperEnds } from '../platform/child-process.js';
import type { Services } from '../composition/services.js';
import { buildApp, type ReadinessProbe } from './app.js';
import { ApiError } from '../platform/errors.js';
import { checkPortsFree, PortInUseError } from './startup.js';

const SHUTDOWN_GRACE_MS = 10_000;

export interface Listening {
  readonly address: string;
  /** the admin listener's address, when ADMIN_PORT is set */
  readonly adminAddress?: string;
  /** the same shutdown as on SIGTERM (tests) */
  close(): Promise<void>;
}

const isAdminPath = (url: string | undefined) => /^\/admin(\/|$|\?)/.test(url ?? '');

function notFound(req: IncomingMessage, res: ServerResponse): void {
  const error = new ApiError('NOT_FOUND', { payloadMessage: `${req.method} ${(req.url ?? '').split('?')[0]}` });
  res.writeHead(error.statusCode, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(error.toBody()));
}

/**
 * With ADMIN_PORT set, /admin/v1/* lives on a listener of its own (loopback by default): the public
 * listener answers 9404 for it before routing, and the admin listener serves nothing else. Both feed
 * the same Fastify handler, so the admin routes keep their auth, hooks and envelope.
 */
function separateAdminListener(app: FastifyInstance): Server {
  const [handler] = app.server.listeners('request') as RequestListener[];
  if (!handler) throw new Error('the Fastify server has no request handler');
  app.server.removeAllListeners('request');
  app.server.on('request', (req: IncomingMessage, res: ServerResponse) =>
    isAdminPath(req.url) ? notFound(req, res) : handler(req, res),
  );
  const admin = createServer((req, res) => (isAdminPath(req.url) ? handler(req, res) : notFound(req, res)));
  admin.requestTimeout = app.server.requestTimeout;
  admin.keepAliveTimeout = app.server.keepAliveTimeout;
  return admin;
}

/** Signals this close together are one Ctrl-C passed on by npm and tsx, not a second request to stop. */
const SAME_KEYPRESS_MS = 2_000;

/**
 * Listens and installs graceful shutdown: on SIGINT/SIGTERM or a fatal error the server stops
 * accepting, finishes in-flight requests, then runs `onClose` (database, gateways, ...).
 */
export async function listen(
  app: FastifyInstance,
  config: Pick<Config, 'host' | 'port'> & Partial<Pick<Config, 'admin'>>,
  onClose: () => Promise<void> = async () => undefined,
): Promise<Listening> {
  const admin = config.admin ? separateAdminListener(app) : undefined;
  let closing: Promise<void> | undefined;
  const shutdown = () => {
    closing ??= (async () => {
      if (admin?.listening) {
        const closed = new Promise<void>((done) => admin.close(() => done()));
        admin.closeIdleConnections();
        await closed;
      }
      await app.close();
      await onClose();
    })();
    return closing;
  };
  // close-with-grace takes fatal errors; the signals are taken here: Ctrl-C reaches npm, tsx and paygate at once and
  // each passes it on, so one keypress arrives as two or three SIGINTs within a moment (close-with-grace took the
  // second for the person insisting, exited with 1 and cut the shutdown short). A repeat within SAME_KEYPRESS_MS of
  // the first is that keypress; a later one ends the process at once.
  const grace = closeWithGrace({ delay: SHUTDOWN_GRACE_MS, skip: ['SIGINT', 'SIGTERM'] }, async ({ err }) => {
    if (err) app.log.error({ err }, 'shutting down after a fatal error');
    await shutdown();
  });
  let firstSignalAt: number | undefined;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (firstSignalAt === undefined) {
        firstSignalAt = Date.now();
        app.log.info({ signal }, 'shutting down');
        void grace.close();
      } else if (Date.now() - firstSignalAt > SAME_KEYPRESS_MS) {
        process.stderr.write(`paygate: ${signal} again: exiting now, before the shutdown has finished\n`);
        process.exit(1);
      }
    });
  }
  // taken since checkPortsFree looked: the same one-line hint, not an EADDRINUSE stack
  const inUse = (variable: 'PORT' | 'ADMIN_PORT', port: number) => (err: unknown) => {
    throw (err as NodeJS.ErrnoException).code === 'EADDRINUSE' ? new PortInUseError(variable, port) : err;
  };
  const address = await app.listen({ host: config.host, port: config.port }).catch(inUse('PORT', config.port));
  app.log.info({ address }, 'paygate API listening');
  let adminAddress: string | undefined;
  if (admin && config.admin) {
    const { host, port } = config.admin;
    await new Promise<void>((ready, fail) => {
      admin.once('error', fail);
      admin.listen(port, host, () => ready());
    }).catch(inUse('ADMIN_PORT', port));
    const bound = admin.address() as AddressInfo;
    adminAddress = `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
    app.log.info({ address: adminAddress }, 'paygate admin API listening (only there)');
  }
  return {
    address,
    ...(adminAddress ? { adminAddress } : {}),
    async close() {
      grace.uninstall();
      await shutdown();
    },
  };
}

/**
 * The app as both entry points build it: configured storage, gateways, keyring and Temporal client, and the
 * process's services (createCoreServices, over the same core, client, logger and clocks).
 */
export function buildConfiguredApp(parts: {
  core: Core;
  logger: Logger;
  temporal: TemporalClient;
  services: Services;
  readiness?: Readonly<Record<string, ReadinessProbe>>;
  /** the embedded engine's advanceable clock (npm start in sandbox mode): the routes that read and advance it */
  sandboxClock?: SandboxClock;
  /** the process's clocks (createClocks): the business clock follows the sandbox clock when one runs */
  clocks?: Clocks;
}): Promise<FastifyInstance> {
  const { core, temporal } = parts;
  return buildApp({
    config: core.config,
    database: core.database,
    gateways: core.gateways.gateways,
    logger: parts.logger,
    keyring: core.keyring,
    stores: core.stores,
    services: parts.services,
    ...(core.metrics ? { metrics: core.metrics } : {}),
    temporal: { client: temporal.client, taskQueue: core.config.taskQueue },
    ...(core.gateways.sandboxUrl ? { sandboxUrl: core.gateways.sandboxUrl } : {}),
    ...(core.gateways.sandboxToken ? { sandboxToken: core.gateways.sandboxToken } : {}),
    ...(parts.clocks ? { wallClock: parts.clocks.wallClock, businessClock: parts.clocks.businessClock } : {}),
    ...(parts.sandboxClock ? { sandboxClock: parts.sandboxClock } : {}),
    readiness: {
      temporal: async () => {
        await temporal.client.connection.workflowService.getSystemInfo({});
      },
      ...(core.gateways.sandboxReady ? { sandbox: core.gateways.sandboxReady } : {}),
      ...parts.readiness,
    },
  });
}

/** A taken port ends the process at once with its hint on stderr (exit 1, no stack); anything else is rethrown. */
export function exitIfPortInUse(err: unknown): never {
  if (err instanceof PortInUseError) {
    process.stderr.write(`${err.hint}\n`);
    process.exit(1);
  }
  throw err;
}

/**
 * The API as a process of its own (production): a Temporal cluster at TEMPORAL_ADDRESS runs the
 * workflows, with `worker.ts` beside it. `npm start` (src/main.ts) embeds everything instead.
 */
export async function startApiServer(): Promise<FastifyInstance> {
  const config = readConfigOrExit();
  const logger = createLogger({ level: config.logLevel, format: config.logFormat });
  if (!config.temporalAddress) {
    logger.fatal('TEMPORAL_ADDRESS is not set: the standalone API needs a Temporal server (npm start embeds one)');
    process.exit(1);
  }
  await checkPortsFree(config).catch(exitIfPortInUse);
  announceAdminToken(config, logger);
  const core = await openCore(config, logger);
  // on PGlite the database (and the sandbox PGs) run in processes of this one: when one dies, so does the API
  let closing = false;
  let listening: Listening | undefined;
  for (const helper of helperProcesses(core))
    exitWhenHelperEnds(helper, {
      logger,
      shuttingDown: () => closing,
      shutdown: () => (listening ? listening.close() : core.close()),
    });
  const temporal = await connectTemporal(core, config.temporalAddress);
  const services = createCoreServices(core, temporal, logger);
  const app = await buildConfiguredApp({ core, logger, temporal, services });
  listening = await listen(app, config, async () => {
    closing = true;
    await temporal.close();
    await core.close();
  });
  // Ctrl-C reaches the helpers too: one that ends before the shutdown reached it is part of that shutdown
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => (closing = true));
  return app;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  await startApiServer();
}
