// The embedded database in a process of its own (pglite-process-main.ts): PGlite's WebAssembly Postgres runs on
// another core than the API and the worker, which reach it with node-postgres over a unix socket, as they reach a
// Postgres server. The socket sits in a directory only this user can enter (nothing on it is authenticated):
// DATA_DIR/pglite-socket beside the cluster, or a private temporary directory when that path is too long for a
// socket address.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type ChildHandle, entryFile, startChild } from '../child-process.js';

/** node-postgres finds a server's socket as <directory>/.s.PGSQL.<port> */
export const SOCKET_PORT = 5432;
const SOCKET_NAME = `.s.PGSQL.${SOCKET_PORT}`;
/** How long a start waits for another process's database on the same cluster to close. */
const IN_USE_WAIT_MS = 10_000;
/** a socket address holds 104 bytes on macOS, 108 on Linux, the terminating NUL included */
const MAX_SOCKET_PATH_BYTES = 103;

export interface PGliteProcess {
  /** the directory of the socket: node-postgres's `host` */
  readonly socketDir: string;
  readonly pid: number;
  /** settles when the process ends (stop() included), with how */
  readonly exited: Promise<string>;
  /** closes the database in order (open transactions rolled back, a checkpoint), SIGKILL if it hangs */
  stop(): Promise<void>;
}

function answers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Where the database process of the cluster in `dataDir` serves it: beside the cluster. */
function socketBeside(dataDir: string): string {
  return path.join(path.dirname(dataDir), `${path.basename(dataDir)}-socket`);
}

/**
 * Two processes on one cluster would corrupt it: a socket that answers belongs to a running paygate, or to one
 * closing after its parent ended (its socket goes last, once PGlite has closed), which is waited for. Throws when
 * the cluster in `dataDir` stays served.
 */
export async function refuseIfServed(dataDir: string): Promise<void> {
  const socketPath = path.join(socketBeside(dataDir), SOCKET_NAME);
  const deadline = Date.now() + IN_USE_WAIT_MS;
  while (await answers(socketPath)) {
    if (Date.now() > deadline) {
      throw new Error(`the database in ${dataDir} is in use by another paygate process (its socket answers)`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Starts the database process on the PGlite cluster in `dataDir` (created the first time). */
export async function startPGliteProcess(dataDir: string): Promise<PGliteProcess> {
  const besideCluster = socketBeside(dataDir);
  const fits = Buffer.byteLength(path.join(besideCluster, SOCKET_NAME)) <= MAX_SOCKET_PATH_BYTES;
  let socketDir: string;
  if (fits) {
    socketDir = besideCluster;
    await mkdir(socketDir, { recursive: true, mode: 0o700 });
    await refuseIfServed(dataDir);
  } else {
    socketDir = await mkdtemp(path.join(tmpdir(), 'paygate-db-'));
  }
  const removeTemporary = () => (fits ? Promise.resolve() : rm(socketDir, { recursive: true, force: true }));

  let child: ChildHandle<{ socketPath: string }>;
  try {
    child = await startChild<{ socketPath: string }>({
      name: 'paygate database',
      entry: entryFile(import.meta.url, './pglite-process-main'),
      args: [dataDir, path.join(socketDir, SOCKET_NAME)],
    });
  } catch (err) {
    await removeTemporary();
    throw err;
  }
  return {
    socketDir,
    pid: child.pid,
    exited: child.exited,
    async stop() {
      await child.stop();
      await removeTemporary();
    },
  };
}
