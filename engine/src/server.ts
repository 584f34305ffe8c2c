// Assembles the engine and its gRPC services; the programmatic entry point (the CLI is a thin layer over it).
import * as grpc from '@grpc/grpc-js';
import { authInterceptor } from './auth.js';
import type { DynamicConfig } from './dynamic-config.js';
import { Engine } from './engine.js';
import { addService } from './grpc.js';
import { installSyncDecompression } from './grpc-decompression.js';
import { Journal } from './journal.js';
import { log } from './log.js';
import { HealthService, OperatorService } from './operator-service.js';
import { TestService } from './test-service.js';
import { VisibilityService } from './visibility-service.js';

/** The largest request the server accepts (gRPC's default, which Temporal keeps). */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

export interface DevServerOptions {
  /** Time-skipping test server (virtual clock + TestService) instead of the real-clock dev server. */
  timeSkipping: boolean;
  host?: string;
  port?: number;
  namespaces?: string[];
  searchAttributes?: Record<string, string>;
  /** Journal file for durable mode; in memory when absent. */
  dbFilename?: string;
  /** How long closed executions are kept; 24 h by default. */
  retentionMs?: number;
  /** Dynamic config settings (`--dynamic-config-value`); Temporal's defaults for the rest. */
  dynamicConfig?: Partial<DynamicConfig>;
  /** Dev-server mode: serve TestService's GetCurrentTime / Sleep / SleepUntil to advance the clock (`--clock-control`). */
  clockControl?: boolean;
  /**
   * Every call must carry `authorization: Bearer <authToken>` (the header of a Temporal API key) or it is answered
   * UNAUTHENTICATED; only the gRPC health check stays open (`--auth-token-file`). Unset: no credential, as today.
   */
  authToken?: string;
}

export interface DevServer {
  port: number;
  address: string;
  engine: Engine;
  close(): Promise<void>;
}

export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  // checked before anything is opened: a token too short to be one stops the start
  const auth = opts.authToken !== undefined ? authInterceptor(opts.authToken) : undefined;
  let journal: Journal | undefined;
  let restored: Map<string, { state: unknown; events: unknown[] }> | undefined;
  if (opts.dbFilename) {
    const opened = Journal.open(opts.dbFilename);
    journal = opened.journal;
    restored = opened.restored;
    log.info('journal compacted on open', { file: opts.dbFilename, ...opened.stats });
  }
  const engine = new Engine({
    timeSkipping: opts.timeSkipping,
    namespaces: opts.namespaces ?? [],
    searchAttributes: opts.searchAttributes ?? {},
    journal,
    retentionMs: opts.retentionMs,
    dynamicConfig: opts.dynamicConfig,
  });
  if (restored) {
    const count = engine.restore(restored);
    await engine.commit();
    log.info('restored executions from journal', { count, file: opts.dbFilename });
  }
  installSyncDecompression();
  const server = new grpc.Server({
    // Temporal's frontend keeps gRPC's default: a request over 4 MiB is RESOURCE_EXHAUSTED.
    'grpc.max_receive_message_length': MAX_REQUEST_BYTES,
    // Channelz bookkeeping (per-call counters and timestamps) serves no one here and costs on every call.
    'grpc.enable_channelz': 0,
    // without a token no interceptor at all: an interceptor costs a little on every call
    ...(auth ? { interceptors: [auth] } : {}),
  });
  const workflowService = 'temporal.api.workflowservice.v1.WorkflowService';
  const operatorService = 'temporal.api.operatorservice.v1.OperatorService';
  const unimplementedWorkflowRpcs = engine.unimplemented(workflowService);
  addService(server, workflowService, engine.workflowService(), new VisibilityService(engine), unimplementedWorkflowRpcs);
  addService(server, operatorService, new OperatorService(engine), engine.unimplemented(operatorService));
  addService(server, 'grpc.health.v1.Health', new HealthService());
  const testService = 'temporal.api.testservice.v1.TestService';
  if (opts.timeSkipping) addService(server, testService, new TestService(engine.clock));
  else if (opts.clockControl) addService(server, testService, new TestService(engine.clock, () => engine.commit()));
  const host = opts.host ?? '127.0.0.1';
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      `${host.includes(':') ? `[${host}]` : host}:${opts.port ?? 0}`,
      grpc.ServerCredentials.createInsecure(),
      (err, p) => (err ? reject(err) : resolve(p)),
    ),
  );
  const sweeper = setInterval(() => engine.sweepClosed(), 60_000);
  sweeper.unref();
  return {
    port,
    address: `${host}:${port}`,
    engine,
    close: async () => {
      clearInterval(sweeper);
      engine.close();
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 1000);
        server.tryShutdown(() => {
          clearTimeout(t);
          resolve();
        });
      });
    },
  };
}
