// What `npm start` tells a person at the terminal: the ports it needs are checked before anything starts (a taken
// port is one line with a hint, not an EADDRINUSE stack ten seconds later), and when it is ready, a short banner
// with the addresses and the next command. Both go to stderr as plain text, never through the JSON log.
import { createServer } from 'node:net';
import type { Config } from '../platform/config/index.js';

/** PORT or ADMIN_PORT is taken by another process. */
export class PortInUseError extends Error {
  override readonly name = 'PortInUseError';
  constructor(
    readonly variable: 'PORT' | 'ADMIN_PORT',
    readonly port: number,
  ) {
    super(`port ${port} is in use`);
  }

  /** The one line printed instead of a stack. */
  get hint(): string {
    const other = this.port >= 65535 ? this.port - 1 : this.port + 1;
    return `paygate: port ${this.port} is in use; set ${this.variable} to another port (${this.variable}=${other} npm start)`;
  }
}

/** Binds host:port and lets go at once: rejects with PortInUseError when another process holds it. */
function probe(variable: 'PORT' | 'ADMIN_PORT', host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new PortInUseError(variable, port) : err),
    );
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve()));
  });
}

/**
 * Checks that the API's port (and the admin listener's) can be bound, before the database, the engine and the worker
 * start. A port taken in between is still caught where the server listens (listen() answers PortInUseError too).
 */
export async function checkPortsFree(config: Pick<Config, 'host' | 'port' | 'admin'>): Promise<void> {
  if (config.port !== 0) await probe('PORT', config.host, config.port);
  if (config.admin && config.admin.port !== 0) await probe('ADMIN_PORT', config.admin.host, config.admin.port);
}

/** Binds host:port and keeps it, turning every connection away (reset) until released. */
function hold(variable: 'PORT' | 'ADMIN_PORT', host: string, port: number): Promise<() => Promise<void>> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => socket.destroy());
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new PortInUseError(variable, port) : err),
    );
    server.listen({ host, port, exclusive: true }, () => resolve(() => new Promise<void>((done) => server.close(() => done()))));
  });
}

/**
 * As checkPortsFree, but the ports stay bound while the database, the engine and the worker start (seconds, in which
 * their own sockets could be given the same port by the system): the returned function lets go of them just before
 * the server listens. A connection meanwhile is reset, as by a port nobody listens on.
 */
export async function reservePorts(config: Pick<Config, 'host' | 'port' | 'admin'>): Promise<() => Promise<void>> {
  const held: (() => Promise<void>)[] = [];
  try {
    if (config.port !== 0) held.push(await hold('PORT', config.host, config.port));
    if (config.admin && config.admin.port !== 0) held.push(await hold('ADMIN_PORT', config.admin.host, config.admin.port));
  } catch (err) {
    for (const release of held) await release();
    throw err;
  }
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    for (const release of held) await release();
  };
}

/** An address a person can open: the wildcard hosts as localhost. */
export function browsable(address: string): string {
  return address.replace(/^(https?:\/\/)(0\.0\.0\.0|\[::\])(?=:)/, '$1localhost');
}

/** Who can reach the API at the address it listens on: the banner says it, so a wide HOST is never a surprise. */
function reach(address: string): string {
  const host = unbracketedHost(address);
  if (host === '0.0.0.0' || host === '::') return `from the network too (listening on every interface: HOST=${host})`;
  if (host === '127.0.0.1' || host === '::1' || host.startsWith('127.'))
    return 'from this machine only (HOST=0.0.0.0 exposes it)';
  return `at ${host} (HOST)`;
}

function unbracketedHost(address: string): string {
  const host = new URL(address).hostname;
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** What the admin CLI needs to find this server when it is not at its default (http://127.0.0.1:8080). */
function cliTarget(addresses: { readonly address: string; readonly adminAddress?: string }): string {
  // the CLI goes to ADMIN_PORT when set, else PORT: the other terminal needs the same
  if (addresses.adminAddress) return `ADMIN_PORT=${new URL(addresses.adminAddress).port} `;
  const port = new URL(addresses.address).port || '80';
  return port === '8080' ? '' : `PORT=${port} `;
}

/** The banner `npm start` prints when it is ready (stderr, once). */
export function startupBanner(
  config: Pick<Config, 'sandbox' | 'adminTokenGenerated'>,
  addresses: { readonly address: string; readonly adminAddress?: string },
): string {
  const api = browsable(addresses.address);
  const lines = [
    '',
    `paygate is ready (${config.sandbox ? 'sandbox mode: sandbox PGs, no real charges' : 'production mode'})`,
    `  API            ${api}`,
    ...(addresses.adminAddress ? [`  admin API      ${browsable(addresses.adminAddress)}/admin/v1`] : []),
    ...(config.sandbox ? [`  dashboard      ${api}/dashboard`] : []),
    `  API reference  ${api}/docs`,
    `  reachable      ${reach(addresses.address)}`,
    `  admin token    ${config.adminTokenGenerated ? 'generated for this run, printed above (set ADMIN_TOKEN to keep one)' : 'ADMIN_TOKEN, as set'}`,
    '',
    'next: in another terminal, with the same ADMIN_TOKEN, create a project:',
    `  ${cliTarget(addresses)}npm run admin -- projects create --name "my shop"`,
    '',
  ];
  return lines.join('\n');
}
