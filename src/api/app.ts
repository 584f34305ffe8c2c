// buildApp: the Fastify application with its dependencies injected. No listening here (server.ts
// does that), so tests drive the very same app through inject().
import { randomUUID } from 'node:crypto';
import { pipeline } from 'node:stream';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { Config } from '../platform/config/index.js';
import { ApiError } from '../platform/errors.js';
import type { GatewayRegistry } from '../gateways/index.js';
import { createLogger, type Logger } from '../platform/logger.js';
import type { Database } from '../platform/db/db.js';
import type { Keyring } from '../platform/security/keyring.js';
import type { Services } from '../composition/services.js';
import type { WorkflowRuntime } from '../platform/temporal/workflow-calls.js';
import type { Stores } from '../composition/stores.js';
import { authenticateKeys, authPlugin, verifyAdminToken } from './auth.js';
import { registerDocsUi, registerOpenApi } from './docs/openapi.js';
import {
  containsLoneSurrogate,
  containsNul,
  isUtf8Target,
  jsonDepthExceeds,
  jsonSyntaxErrorAt,
  lineAndColumn,
  MAX_JSON_DEPTH,
  utf8Checked,
} from './body-limits.js';
import { clientErrorHandler, installErrorHandling, sendApiError, toApiError } from './errors.js';
import { projectRoutes } from './routes/projects.js';
import { paymentRoutes } from './routes/payments.js';
import { healthRoutes, type ReadinessProbe } from './routes/health.js';
import { rootRoutes } from './routes/root.js';
import { verificationRoutes } from './routes/verification.js';
import { webhookRoutes } from './routes/webhooks.js';
import { escrowRoutes } from './routes/escrow.js';
import { reserveRoutes } from './routes/reserves.js';
import { sandboxClockRoutes } from './routes/sandbox-clock.js';
import { sandboxFaultRoutes } from './routes/sandbox-faults.js';
import type { SandboxClock } from '../platform/temporal/sandbox-clock.js';
import { scheduleRoutes } from './routes/schedules.js';
import { upstreamRoutes } from './routes/upstream.js';
import { dashboardRoutes } from '../dashboard/index.js';
import { type Resolver, countPendingDeliveries } from '../webhooks/index.js';
import { createMetrics, type Metrics } from '../platform/observability/metrics.js';
import { observabilityPlugin } from './observability.js';
import { type AnswerCheck, installAnswerCheck } from './answer-check.js';

export type { ReadinessProbe } from './routes/health.js';

export interface AppDeps {
  readonly config: Config;
  readonly database: Database;
  readonly gateways: GatewayRegistry;
  readonly logger?: Logger;
  /**
   * Real-world time (Clocks.wallClock, src/platform/time.ts): authentication (access tokens, key expiry and rotation
   * grace), Idempotency-Key retention, the dashboard; the host's clock when absent (tests pass a controllable clock)
   */
  readonly wallClock?: () => Date;
  /**
   * The durable processes' time (Clocks.businessClock): the sandbox clock's `now` with the embedded engine in sandbox
   * mode; a receipt's requested_at, reserve and schedule dates judged against "now"; the wall clock when absent
   */
  readonly businessClock?: () => Date;
  /** extra readiness probes for GET /health by component name (e.g. engine, worker) */
  readonly readiness?: Readonly<Record<string, ReadinessProbe>>;
  /**
   * Where the long-running processes run. Read by buildServices (src/composition) when it builds `services` from
   * these deps: without it those use cases answer 503. buildApp itself reads none of temporal, workflowCallTimeoutMs,
   * sandboxToken and webhookResolve: they are here so one object builds both.
   */
  readonly temporal?: WorkflowRuntime;
  /**
   * How long a use case waits on a workflow (start + update) before answering with an error instead of holding the
   * request open, e.g. while no worker polls. Default 60 s: above a send with gateway retries. Read by buildServices.
   */
  readonly workflowCallTimeoutMs?: number;
  /** seals sensitive columns (the stores were built with it) and the Idempotency-Key records */
  readonly keyring: Keyring;
  /** the process's repositories, built once by the composition root (createStores) */
  readonly stores: Stores;
  /**
   * The process's use cases, built once by the composition root (buildServices in src/composition) from these same
   * deps: the same clocks, logger, metrics, workflow runtime and sandbox address. The routes and the dashboard call them.
   */
  readonly services: Services;
  /** the sandbox gateways' address, for the sandbox-only SMS inbox route */
  readonly sandboxUrl?: string;
  /** the Bearer token of the sandbox's internal routes (the inbox) */
  readonly sandboxToken?: string;
  /** the DNS lookup of the webhook URL check at save; tests inject one */
  readonly webhookResolve?: Resolver;
  /** the embedded engine's advanceable clock (sandbox mode); pass its `now` as `businessClock` too */
  readonly sandboxClock?: SandboxClock;
  /** the process's metrics registry (one per process, shared with its worker): the one `services` count into */
  readonly metrics?: Metrics;
  /** holds every answer against its route's contract (./answer-check.ts); the test suite passes one */
  readonly answerCheck?: AnswerCheck;
}

export type ResolvedDeps = AppDeps & {
  readonly logger: Logger;
  readonly wallClock: () => Date;
  readonly businessClock: () => Date;
  readonly metrics: Metrics;
};

declare module 'fastify' {
  interface FastifyInstance {
    readonly deps: ResolvedDeps;
  }
}

/** Bodies larger than this are refused with PAYLOAD_TOO_LARGE; every request of the API is small. */
export const BODY_LIMIT_BYTES = 64 * 1024;
/** How long a socket may stay silent: above every wait a handler documents (see buildApp's connectionTimeout). */
export const CONNECTION_IDLE_TIMEOUT_MS = 75_000;

/** The route plugins, in registration order. Add an area's plugin here (one line each). */
const routePlugins: readonly FastifyPluginAsync[] = [
  rootRoutes,
  healthRoutes,
  projectRoutes,
  paymentRoutes,
  verificationRoutes,
  webhookRoutes,
  escrowRoutes,
  reserveRoutes,
  scheduleRoutes,
  upstreamRoutes,
  sandboxClockRoutes,
  dashboardRoutes({ toApiError, verifyAdminToken, authenticateKeys }),
  sandboxFaultRoutes,
];

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const wallClock = deps.wallClock ?? (() => new Date());
  const businessClock = deps.businessClock ?? wallClock;
  const logger = deps.logger ?? createLogger({ level: deps.config.logLevel });
  // entry points pass their process's registry; a bare app (tests) counts its own, without Node's process series
  const metrics = deps.metrics ?? createMetrics({ processMetrics: false });
  metrics.readPendingDeliveriesFrom(() => countPendingDeliveries(deps.database.db));
  const resolved: ResolvedDeps = { ...deps, logger, wallClock, businessClock, metrics };

  const app = Fastify({
    loggerInstance: resolved.logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    // X-Forwarded-For is believed only from these proxies; otherwise request.ip is the socket peer
    trustProxy: deps.config.trustedProxies.length > 0 ? [...deps.config.trustedProxies] : false,
    // clients must not choose our request ids
    requestIdHeader: false,
    genReqId: () => randomUUID(),
    // a socket idle this long is dropped: longer than the longest answer a handler waits for (workflow updates
    // and a clock advance, 60 s; two upstream provider calls in a row, 2 x MAX_UPSTREAM_DEADLINE_MS), which would
    // otherwise lose its documented 2401 / 9503 / 9504 / `settled: false`
    connectionTimeout: CONNECTION_IDLE_TIMEOUT_MS,
    keepAliveTimeout: 65_000,
    requestTimeout: 60_000,
    // answered below with the catalog envelope instead of Fastify's bare 503
    return503OnClosing: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    clientErrorHandler,
    // bad URL encoding and over-long path parameters are answered by the router, not the error handler
    frameworkErrors: (error, request, reply) => sendApiError(reply, toApiError(error, request)),
  });

  app.decorate('deps', resolved);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandling(app);
  if (deps.answerCheck) installAnswerCheck(app, deps.answerCheck);

  // Once shutdown begins, requests still arriving on kept-alive or pipelined connections get 9503 in the
  // catalog envelope; Fastify has already set `Connection: close` on them, and in-flight requests finish.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async () => {
    if (closing) throw new ApiError('SERVICE_UNAVAILABLE', { payloadMessage: 'the server is shutting down' });
  });

  // Text is UTF-8: a request target or a body whose bytes are not is refused (9400) before any parser decodes it,
  // which would turn the bad bytes into U+FFFD and store that. Once, here, for every parser (JSON, the
  // dashboard's forms, the PGs' signed notifications).
  app.addHook('onRequest', async (request) => {
    if (!isUtf8Target(request.raw.url ?? '')) {
      throw new ApiError('INVALID_REQUEST', { payloadMessage: 'the path or query is not valid UTF-8' });
    }
  });
  app.addHook('preParsing', async (request, _reply, payload) => {
    const { 'content-length': length, 'transfer-encoding': chunked } = request.headers;
    if (chunked === undefined && (length === undefined || length === '0')) return payload;
    const form = String(request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
    const invalid = () => new ApiError('INVALID_REQUEST', { payloadMessage: 'the request body is not valid UTF-8' });
    const checked = utf8Checked(invalid, form);
    return pipeline(payload, checked, () => {}) as typeof payload;
  });

  // Only JSON bodies: no text/plain, no forms. An empty JSON body counts as no body (clients send
  // `Content-Type: application/json` on the body-less POSTs too).
  app.removeContentTypeParser('text/plain');
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    // refused before parsing: a deep body would exhaust the stack of every later walk over it
    if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
      done(
        new ApiError('INVALID_REQUEST', { payloadMessage: `the JSON body is nested deeper than ${MAX_JSON_DEPTH} levels` }),
        undefined,
      );
      return;
    }
    parseJson(request, text, (err, parsed) => {
      if (err === null) {
        done(null, parsed);
        return;
      }
      // say where the text breaks the grammar (never what it holds: it may carry card data); valid JSON refused by
      // the parser is a prototype-poisoning key
      const at = jsonSyntaxErrorAt(text);
      const where = at === undefined ? undefined : lineAndColumn(text, at);
      const payloadMessage =
        where === undefined
          ? 'the JSON body must not use the keys "__proto__" or "constructor" with "prototype"'
          : at! >= text.length
            ? `the JSON body ends early (line ${where.line}, column ${where.column})`
            : `the JSON body is not valid JSON at line ${where.line}, column ${where.column} (character ${at! + 1})`;
      done(new ApiError('INVALID_REQUEST', { payloadMessage }), undefined);
    });
  });
  // Every request body of this API is a JSON object: arrays, strings, numbers and null are refused.
  app.addHook('preValidation', async (request) => {
    const body: unknown = request.body;
    if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body))) {
      throw new ApiError('INVALID_REQUEST', { payloadMessage: 'the request body must be a JSON object' });
    }
    // Postgres text cannot hold U+0000: refuse it here rather than fail in the database
    for (const [part, value] of [
      ['path', request.params],
      ['query', request.query],
      ['body', body],
    ] as const) {
      if (containsNul(value))
        throw new ApiError('INVALID_REQUEST', { payloadMessage: `${part}: NUL characters are not allowed` });
      // a JSON escape can name half of a surrogate pair: not text (a database would store U+FFFD, or refuse jsonb)
      if (containsLoneSurrogate(value))
        throw new ApiError('INVALID_REQUEST', {
          payloadMessage: `${part}: a string holds a lone surrogate (\\ud800-\\udfff without its pair), which is not Unicode text`,
        });
    }
  });

  await registerOpenApi(app);
  await app.register(authPlugin);
  await app.register(observabilityPlugin, { metrics });

  for (const plugin of routePlugins) await app.register(plugin);

  app.get('/openapi.json', { config: { auth: 'none' } }, async () => app.swagger());
  await registerDocsUi(app);

  return app;
}
