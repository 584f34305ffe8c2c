// Command line of bin/temporal-devserver, matching how @temporalio/testing launches a server:
//   time-skipping:  temporal-devserver <port> [extra args]
//   dev server:     temporal-devserver server start-dev --port P --namespace N --ip A [--db-filename F]
//                   [--search-attribute k=Type] [--dynamic-config-value ...] [--headless] [--log-format f] [--log-level l]
// Unknown flags are accepted and ignored, as the launcher may pass options meant for the real CLI.
import { configureLog, log } from './log.js';
import { startDevServer, type DevServerOptions } from './server.js';

const FLAGS_WITH_VALUE = new Set([
  '--port',
  '--namespace',
  '-n',
  '--ip',
  '--db-filename',
  '-f',
  '--search-attribute',
  '--dynamic-config-value',
  '--log-format',
  '--log-level',
  '--ui-port',
  '--ui-ip',
  '--ui-public-path',
  '--config',
  '--http-port',
  '--metrics-port',
  '--sqlite-pragma',
  '--ui-asset-path',
  '--ui-codec-endpoint',
]);

export function parseArgs(argv: string[]): DevServerOptions & { logLevel?: string; logFormat?: string } {
  if (argv[0] === 'server' && argv[1] === 'start-dev') {
    const opts: DevServerOptions & { logLevel?: string; logFormat?: string } = {
      timeSkipping: false,
      port: 7233,
      host: '127.0.0.1',
      namespaces: [],
      searchAttributes: {},
    };
    for (let i = 2; i < argv.length; i++) {
      let flag = argv[i]!;
      let value: string | undefined;
      const eq = flag.indexOf('=');
      if (flag.startsWith('--') && eq > 0) {
        value = flag.slice(eq + 1);
        flag = flag.slice(0, eq);
      } else if (FLAGS_WITH_VALUE.has(flag)) {
        value = argv[++i];
      }
      switch (flag) {
        case '--port':
        case '-p':
          opts.port = Number(value ?? argv[++i]);
          break;
        case '--ip':
          opts.host = value ?? '127.0.0.1';
          break;
        case '--namespace':
        case '-n':
          if (value) opts.namespaces!.push(value);
          break;
        case '--db-filename':
        case '-f':
          opts.dbFilename = value;
          break;
        case '--search-attribute': {
          const [name, type] = (value ?? '').split('=');
          if (name) opts.searchAttributes![name] = type || 'Keyword';
          break;
        }
        case '--log-level':
          opts.logLevel = value;
          break;
        case '--log-format':
          opts.logFormat = value;
          break;
        default:
          break;
      }
    }
    return opts;
  }
  const port = Number(argv[0]);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error('usage: temporal-devserver <port>  |  temporal-devserver server start-dev --port <port> [...]');
  }
  // The Rust launcher probes 127.0.0.1 but picks the port on 0.0.0.0: listen on every interface like the Java server.
  return { timeSkipping: true, port, host: '0.0.0.0' };
}

async function main(): Promise<void> {
  let opts;
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
