// Command line of bin/temporal-devserver, matching how @temporalio/testing launches a server:
//   time-skipping:  temporal-devserver <port> [extra args]
//   dev server:     temporal-devserver server start-dev --port P --namespace N --ip A [--db-filename F]
//                   [--search-attribute k=Type] [--dynamic-config-value ...] [--headless] [--log-format f] [--log-level l]
//                   [--clock-control] [--auth-token-file F]
// A credential (either form): `--auth-token-file F`, or TEMPORAL_DEVSERVER_AUTH_TOKEN for a launcher that holds the
// token in memory — never the token itself on the command line, which every user of the machine can read (ps).
// Unknown flags are accepted and ignored, as the launcher may pass options meant for the real CLI.
import { readFileSync } from 'node:fs';
import { MIN_AUTH_TOKEN_LENGTH } from './auth.js';
import { configureLog, log } from './log.js';
import { parseArgs } from './args.js';
import { startDevServer } from './server.js';

const AUTH_TOKEN_ENV = 'TEMPORAL_DEVSERVER_AUTH_TOKEN';

/** The token of `--auth-token-file` (trimmed), else of the environment; undefined without either. */
function readAuthToken(file: string | undefined): string | undefined {
  const fromEnv = process.env[AUTH_TOKEN_ENV]?.trim();
  delete process.env[AUTH_TOKEN_ENV];
  let token: string | undefined;
  let source: string;
  if (file !== undefined) {
    source = `--auth-token-file ${file}`;
    try {
      token = readFileSync(file, 'utf8').trim();
    } catch (err) {
      throw new Error(`cannot read ${source}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  } else {
    source = AUTH_TOKEN_ENV;
    if (!fromEnv) return undefined;
    token = fromEnv;
  }
  // an empty or short file must not quietly mean "no credential" or a guessable one (never say what it holds)
  if (token.length < MIN_AUTH_TOKEN_LENGTH) {
    throw new Error(`${source}: the token must be at least ${MIN_AUTH_TOKEN_LENGTH} characters`);
  }
  return token;
}

async function main(): Promise<void> {
  let opts: ReturnType<typeof parseArgs>;
  try {
    opts = parseArgs(process.argv.slice(2));
    const authToken = readAuthToken(opts.authTokenFile);
    if (authToken !== undefined) opts.authToken = authToken;
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
  log.info('listening', {
    address: server.address,
    timeSkipping: opts.timeSkipping,
    db: opts.dbFilename ?? null,
    authenticated: opts.authToken !== undefined,
  });
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
