// Argument parsing of bin/temporal-devserver for the two command lines @temporalio/testing uses.
import { parseDynamicConfig } from './dynamic-config.js';
import type { DevServerOptions } from './server.js';

/** `authTokenFile`: where the token of `authToken` is read from (the launcher reads it, never argv itself). */
export type CliOptions = DevServerOptions & { logLevel?: string; logFormat?: string; authTokenFile?: string };

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
  '--auth-token-file',
]);

export function parseArgs(argv: string[]): CliOptions {
  if (argv[0] === 'server' && argv[1] === 'start-dev') {
    const opts: CliOptions = {
      timeSkipping: false,
      port: 7233,
      host: '127.0.0.1',
      namespaces: [],
      searchAttributes: {},
    };
    const dynamicConfigValues: string[] = [];
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
        case '--dynamic-config-value':
          if (value !== undefined) dynamicConfigValues.push(value);
          break;
        case '--log-level':
          opts.logLevel = value;
          break;
        case '--log-format':
          opts.logFormat = value;
          break;
        case '--clock-control':
          opts.clockControl = true;
          break;
        case '--auth-token-file':
          // given without a file it still asks for a credential: reading '' fails the start
          opts.authTokenFile = value ?? '';
          break;
        default:
          break;
      }
    }
    opts.dynamicConfig = parseDynamicConfig(dynamicConfigValues);
    return opts;
  }
  const port = Number(argv[0]);
  // Loopback unless told otherwise (`<port> --ip <host>`): the launcher probes 127.0.0.1 anyway.
  const ip = argv.indexOf('--ip');
  const host = ip > 0 && argv[ip + 1] ? argv[ip + 1]! : '127.0.0.1';
  const tokenFlag = argv.indexOf('--auth-token-file');
  const authTokenFile = tokenFlag > 0 ? (argv[tokenFlag + 1] ?? '') : undefined;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(
      'usage: temporal-devserver <port> [--ip <host>] [--auth-token-file <file>]  |  temporal-devserver server start-dev --port <port> [...]',
    );
  }
  return { timeSkipping: true, port, host, ...(authTokenFile !== undefined ? { authTokenFile } : {}) };
}
