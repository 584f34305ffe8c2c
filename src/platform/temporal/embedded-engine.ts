import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TemporalTransport } from './transport.js';

// The embedded Temporal-compatible engine (engine/), launched as a child process in dev-server mode
// with its history under DATA_DIR, so `npm start` needs no Temporal installation. It binds loopback and answers
// only calls that present its token (engine/README.md, "A credential"): loopback is open to every user of the
// machine, the token file is its owner's alone.

export const DEVSERVER_PATH = fileURLToPath(new URL('../../../bin/temporal-devserver', import.meta.url));

export interface EmbeddedEngine {
  readonly address: string;
  /** how a connection presents the engine's token: hand it to every client, worker and clock connecting to it */
  readonly transport: TemporalTransport;
  /** the engine process (benchmarks read its memory) */
  readonly pid: number | undefined;
  /** settles when the engine process ends (stop() included), with how: npm start goes down when it dies */
  readonly exited: Promise<string>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function waitForPort(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the embedded Temporal engine exited with code ${child.exitCode}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the embedded Temporal engine did not listen on port ${port} within ${timeoutMs} ms`);
}

export async function startEmbeddedEngine(opts: {
  dataDir: string;
  namespace: string;
  /** the credential every call must present (src/platform/config/engine-token.ts); never on the command line */
  token: string;
  port?: number;
  /** serve the advanceable clock (sandbox mode: the sandbox clock); the real clock otherwise */
  clockControl?: boolean;
  onOutput?: (line: string) => void;
}): Promise<EmbeddedEngine> {
  // the journal is private; the child also inherits this process's umask (077 under openCore)
  await mkdir(opts.dataDir, { recursive: true, mode: 0o700 });
  const port = opts.port ?? (await freePort());
  const child = spawn(
    process.execPath,
    [
      DEVSERVER_PATH,
      'server',
      'start-dev',
      '--port',
      String(port),
      '--ip',
      '127.0.0.1',
      '--namespace',
      opts.namespace,
      '--db-filename',
      path.join(opts.dataDir, 'temporal.db'),
      '--headless',
      ...(opts.clockControl ? ['--clock-control'] : []),
    ],
    // the token in the child's environment, which only this user can read (argv is anyone's: ps)
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TEMPORAL_DEVSERVER_AUTH_TOKEN: opts.token } },
  );
  const forward = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) opts.onOutput?.(line);
  };
  child.stdout?.on('data', forward);
  child.stderr?.on('data', forward);
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal ? `killed by ${signal}` : `exit code ${code}`)),
  );
  // Never outlive the parent.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  try {
    await waitForPort(port, child, 30_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }

  return {
    address: `127.0.0.1:${port}`,
    transport: { engineToken: opts.token },
    pid: child.pid,
    exited,
    async stop() {
      process.off('exit', killOnExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
