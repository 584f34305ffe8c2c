// buildTestApp: the real app (real Fastify, real database, real sandbox gateways over HTTP) for
// inject()-based tests. PGlite in memory by default; when DATABASE_URL is set, the real Postgres
// with a fresh schema per call, dropped at close, so test files run in parallel and twice in CI.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { buildApp, type AppDeps } from '../../src/api/app.js';
import { buildServices } from '../../src/composition/index.js';
import { createStores } from '../../src/composition/stores.js';
import { parseConfig, type Config } from '../../src/platform/config/index.js';
import { createGatewayRegistry } from '../../src/gateways/registry.js';
import { startSandboxGateways } from '../../src/sandbox/server.js';
import { createLogger, type Logger } from '../../src/platform/logger.js';
import { createMetrics } from '../../src/platform/observability/metrics.js';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { dropSchema, dumpMigratedCluster, openDatabase, type Database } from '../../src/platform/db/db.js';
import type { ProjectCreateInput } from '../../src/projects/service.js';
import type { Project } from '../../src/projects/store.js';
import type { WebhookActivityOptions } from '../../src/activities/webhooks.js';
import { createProviderClient } from '../../src/upstream/index.js';
import type { AnswerCheck, AnswerMismatch } from '../../src/api/answer-check.js';
import { flushAnswered, recordAnswered } from './answers-reached.js';
import { sharedRunArtifact } from './run-cache.js';
import { startTestTemporal, type TestTemporal } from './temporal.js';

export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
/** the Bearer token of the test sandbox's internal routes (/_sandbox/*) */
export const TEST_SANDBOX_TOKEN = 'test-sandbox-token-0123456789abcdef';
/** how long the test app's gateway client waits for a PG answer */
export const TEST_GATEWAY_TIMEOUT_MS = 5_000;
/**
 * How long the test sandbox holds a `timeout` fault's answer or a `late` fault's request: past the gateway
 * timeout, as the faults need, but not the production default of 30 s that every `late` test would wait out.
 */
export const TEST_FAULT_DELAY_MS = TEST_GATEWAY_TIMEOUT_MS + 3_000;

export interface TestProject {
  readonly applicationId: string;
  readonly clientKey: string;
  readonly secretKey: string;
  readonly privateKey: string;
  /** the full header value: 'Basic base64(client_key:secret_key)' */
  readonly basicAuth: string;
  readonly project: Project;
}

/** Real time plus an offset that tests move forward (no waiting). */
export interface TestClock {
  now(): Date;
  advance(ms: number): void;
}

export interface TestApp {
  readonly app: FastifyInstance;
  /** the app's deps, its services included (built as the composition root builds them: `buildServices(deps)`) */
  readonly deps: AppDeps & { readonly wallClock: () => Date; readonly businessClock: () => Date; readonly logger: Logger };
  readonly clock: TestClock;
  readonly sandboxUrl: string;
  /** present with `withTemporal: true`; its skipTime() also moves `clock` to the engine's virtual time */
  readonly temporal?: TestTemporal;
  /** every log line the app wrote so far, as raw text */
  logs(): string;
  createProject(opts?: Partial<ProjectCreateInput>): Promise<TestProject>;
  close(): Promise<void>;
}

export interface TestAppOverrides extends Partial<Omit<AppDeps, 'config' | 'stores' | 'services'>> {
  /** environment variables merged over the test defaults, parsed by the real config parser */
  readonly env?: Record<string, string>;
  readonly config?: Partial<Config>;
  /** extra routes registered before ready(), for tests of the platform itself (auth rules, error mapping) */
  readonly routes?: FastifyPluginAsync;
  /**
   * Starts the embedded engine (time-skipping) and a worker on this app's database, gateways and
   * keyring, and gives the app its client (`deps.temporal`), keyring and sandbox URL.
   */
  readonly withTemporal?: boolean;
  /** the worker's webhook options over the defaults (the app's sandbox mode, the test clock) */
  readonly webhookActivities?: Partial<WebhookActivityOptions>;
  /** the sandbox's fault hold (`timeout`, `late`); TEST_FAULT_DELAY_MS when absent */
  readonly sandboxFaultDelayMs?: number;
}

/**
 * Every answer of the app held against its route's contract (src/api/answer-check.ts). A mismatch fails the test
 * file at close, with the route, the status, what did not match and the body; the answered routes are counted for
 * the run's report of routes no test reached (answers-reached.ts).
 */
function collectAnswers() {
  const mismatches: AnswerMismatch[] = [];
  return {
    check: {
      answered: recordAnswered,
      mismatch: (mismatch: AnswerMismatch) => mismatches.push(mismatch),
    } satisfies AnswerCheck,
    assertAllMatched() {
      if (mismatches.length === 0) return;
      const distinct = new Map<string, { first: AnswerMismatch; count: number }>();
      for (const m of mismatches) {
        const key = `${m.route} -> ${m.status}: ${m.problem}`;
        const entry = distinct.get(key);
        if (entry) entry.count += 1;
        else distinct.set(key, { first: m, count: 1 });
      }
      const lines = [...distinct].map(([key, { first, count }]) => `${key} (${count}x)\n    ${first.body}`);
      throw new Error(`answers that do not match their route's contract:\n  ${lines.join('\n  ')}`);
    },
  };
}

let migratedCluster: Promise<Buffer> | undefined;

/**
 * A fresh in-memory PGlite with every migration applied, started from the run's one migrated cluster (run-cache.ts):
 * about a second instead of the seconds initdb takes. What buildTestApp opens without DATABASE_URL.
 */
export async function openTestPGlite(): Promise<Database> {
  migratedCluster ??= sharedRunArtifact('pglite-migrated.tar', dumpMigratedCluster);
  return openDatabase({ inMemory: true, pgliteDump: await migratedCluster });
}

export function basicAuthHeader(clientKey: string, secretKey: string): string {
  return `Basic ${Buffer.from(`${clientKey}:${secretKey}`, 'utf8').toString('base64')}`;
}

export async function buildTestApp(overrides: TestAppOverrides = {}): Promise<TestApp> {
  const config: Config = {
    ...parseConfig({
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      LOG_LEVEL: 'info',
      UPSTREAM_DEADLINE_MS: String(TEST_GATEWAY_TIMEOUT_MS),
      ...overrides.env,
    }),
    ...overrides.config,
  };

  let offsetMs = 0;
  const clock: TestClock = {
    now: () => new Date(Date.now() + offsetMs),
    advance: (ms) => {
      offsetMs += ms;
    },
  };
  // one controllable clock for both unless a test gives its own: the durable processes' (the sandbox clock of
  // sandbox-clock-stack.ts) and real-world time's
  const now = overrides.businessClock ?? clock.now;
  const wall = overrides.wallClock ?? clock.now;

  const logChunks: string[] = [];
  const logger =
    overrides.logger ??
    createLogger({
      level: config.logLevel,
      destination: new Writable({
        write(chunk: Buffer | string, _encoding, callback) {
          logChunks.push(chunk.toString());
          callback();
        },
      }),
    });

  const answers = collectAnswers();
  const databaseUrl = process.env.DATABASE_URL;
  const schema = databaseUrl ? `t_${randomBytes(8).toString('hex')}` : undefined;
  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await fn().catch(() => undefined);
  };

  try {
    let database: Database;
    if (overrides.database) {
      database = overrides.database;
    } else {
      database = databaseUrl ? await openDatabase({ databaseUrl, schema, poolSize: 4 }) : await openTestPGlite();
      cleanups.push(() => database.close());
      if (databaseUrl && schema) cleanups.push(() => dropSchema(databaseUrl, schema));
    }

    let gateways = overrides.gateways;
    let sandboxUrl = '';
    if (!gateways) {
      const sandbox = await startSandboxGateways({
        host: '127.0.0.1',
        port: 0,
        clock: now,
        logger,
        token: TEST_SANDBOX_TOKEN,
        faultDelayMs: overrides.sandboxFaultDelayMs ?? TEST_FAULT_DELAY_MS,
      });
      cleanups.push(() => sandbox.close());
      const registry = createGatewayRegistry({
        sandboxUrl: sandbox.url,
        timeoutMs: TEST_GATEWAY_TIMEOUT_MS,
        sandboxToken: TEST_SANDBOX_TOKEN,
      });
      cleanups.push(() => registry.close());
      gateways = registry;
      sandboxUrl = sandbox.url;
    }

    // the transport to upstream providers (another paygate in the connector's tests), as the composition builds it
    const providers = createProviderClient({ policy: { sandbox: config.sandbox }, deadlines: config.upstreamDeadlines });
    cleanups.push(() => providers.close());

    let temporal: TestTemporal | undefined;
    const {
      env: _env,
      config: _config,
      routes,
      withTemporal,
      webhookActivities,
      sandboxFaultDelayMs: _faultDelay,
      ...appOverrides
    } = overrides;
    // What the composition root builds once per process: the keyring, the stores over it, the metrics registry, then
    // the services from the app's own deps (over the engine's client with `withTemporal`, before the worker).
    const keyring =
      overrides.keyring ?? createKeyring(parseKeyringSpec(generateKeyringSpec(withTemporal ? 'test' : 'ephemeral')));
    const base = {
      ...appOverrides,
      config,
      database,
      gateways,
      logger,
      wallClock: wall,
      businessClock: now,
      keyring,
      stores: createStores(database.db, keyring),
      metrics: overrides.metrics ?? createMetrics({ processMetrics: false }),
      providers,
      ...(withTemporal && sandboxUrl ? { sandboxUrl, sandboxToken: TEST_SANDBOX_TOKEN } : {}),
      // on Postgres, deliveries saved where no dispatcher runs notify the one that does, as in a split deployment
      ...(database.notifications ? { databaseNotifications: database.notifications } : {}),
    };
    // the dispatcher's attempts connect as the worker's activities do (a test's resolver, a short timeout)
    const attempts = webhookActivities
      ? {
          webhookAttempts: {
            ...(webhookActivities.resolve ? { resolve: webhookActivities.resolve } : {}),
            ...(webhookActivities.attemptTimeoutMs !== undefined ? { attemptTimeoutMs: webhookActivities.attemptTimeoutMs } : {}),
          },
        }
      : {};
    let deps: TestApp['deps'];
    if (withTemporal) {
      const started = await startTestTemporal({
        stores: base.stores,
        gateways,
        keyring,
        services: (runtime) => buildServices({ ...base, temporal: runtime, ...attempts }),
        businessClock: now,
        webhooks: { sandbox: config.sandbox, clock: wall, ...webhookActivities },
        // one registry for the API and the worker, as in one paygate process
        metrics: base.metrics,
      });
      cleanups.push(() => started.close());
      // The API, the sandbox gateways and the workflows must agree on the time: follow the engine's clock.
      const follow = async () => clock.advance((await started.now()).getTime() - clock.now().getTime());
      await follow();
      temporal = {
        ...started,
        async skipTime(ms) {
          await started.skipTime(ms);
          await follow();
          // retries wait on rows, due by the test clock just moved: the dispatcher looks now rather than at its poll
          started.services.webhookDispatcher.wake();
        },
      };
      deps = { ...base, temporal: { client: started.client, taskQueue: started.taskQueue }, services: started.services };
    } else {
      deps = { ...base, services: buildServices({ ...base, ...attempts }) };
    }
    const app = await buildApp({ ...deps, answerCheck: answers.check });
    cleanups.push(() => app.close());
    if (routes) await app.register(routes);
    await app.ready();

    return {
      app,
      deps,
      clock,
      sandboxUrl,
      ...(temporal ? { temporal } : {}),
      logs: () => logChunks.join(''),
      async createProject(opts = {}) {
        const { project, secrets } = await app.deps.services.projects.create({ name: 'test project', ...opts });
        return {
          applicationId: project.application_id,
          clientKey: secrets.client_key,
          secretKey: secrets.secret_key,
          privateKey: secrets.private_key,
          basicAuth: basicAuthHeader(secrets.client_key, secrets.secret_key),
          project,
        };
      },
      async close() {
        await cleanup();
        flushAnswered();
        answers.assertAllMatched();
      },
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
