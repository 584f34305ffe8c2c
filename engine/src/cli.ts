// Command line of bin/temporal-devserver, matching how @temporalio/testing launches a server:
//   time-skipping:  temporal-devserver <port> [extra args]
//   dev server:     temporal-devserver server start-dev --port P --namespace N --ip A [--db-filename F]
//                   [--search-attribute k=Type] [--dynamic-config-value ...] [--headless] [--log-format f] [--log-level l]
// Unknown flags are accepted and ignored, as the launcher may pass options meant for the real CLI.
import { configureLog, log } from './log.js';
import { parseArgs } from './args.js';
import { startDevServer } from './server.js';

async function main(): Promise<void> {
  let opts: ReturnType<typeof parseArgs>;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(2);
  }
  configureLog({ level: opts.logLevel ?? process.env.TEMPORAL_DEVSERVER_LOG_LEVEL ?? 'warn', format: opts.logFormat });
  // One bad request must not take every test's server down: log it loudly and keep serving.
  process.on('uncaughtException', (err) => log.error('uncaught exception', { error: err.stack ?? String(err) }));
  process.on('unhandledRejection', (err) =>
    log.error('unhandled rejection', { error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
  );
  const server = await startDevServer(opts);
  log.info('listening', { address: server.address, timeSkipping: opts.timeSkipping, db: opts.dbFilename ?? null });
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) process.exit(1);
    closing = true;
    log.info('shutting down', { signal });
    const hard = setTimeout(() => process.exit(0), 2000);
    hard.unref();
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGHUP', () => shutdown('SIGHUP'));
  // A server must never outlive its launcher: when the parent dies we are re-parented, so exit.
  const parent = process.ppid;
  const watchdog = setInterval(() => {
    if (process.ppid !== parent) shutdown('parent exited');
  }, 1000);
  watchdog.unref();
}

await main();
