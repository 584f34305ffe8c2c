// Child processes for the harnesses that drive paygate as separate processes (bench/flows.ts, chaos/): start a
// node entry (TypeScript through tsx) and wait until it is ready, and pick free loopback ports.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface Started {
  readonly child: ChildProcess;
  /** the process's stdout and stderr chunks, the last 400 */
  readonly output: string[];
}

export interface StartOptions {
  /** load tsx (default true); false for plain JavaScript entries such as bin/temporal-devserver */
  readonly tsx?: boolean;
  /** how long the process may take to be ready before it is killed (default 300 s) */
  readonly timeoutMs?: number;
  /** node's own flags before the entry (e.g. --cpu-prof, which NODE_OPTIONS may not carry) */
  readonly nodeArgs?: readonly string[];
  /** told the child at once, before it is ready (a caller that must be able to kill it meanwhile) */
  readonly onSpawn?: (child: ChildProcess) => void;
}

/**
 * Spawns a node process running an entry (relative to the repository root); resolves once its output matches
 * `ready`, or once the `ready` probe answers true (polled every 250 ms). A process that exits or times out before
 * that rejects (and is killed with SIGKILL on the timeout).
 */
export async function startProcess(
  entry: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp | (() => Promise<boolean>),
  options: StartOptions = {},
): Promise<Started> {
  const timeoutMs = options.timeoutMs ?? 300_000;
  const nodeArgs = [...(options.nodeArgs ?? []), ...(options.tsx === false ? [] : ['--import', 'tsx'])];
  const child = spawn(process.execPath, [...nodeArgs, entry, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  options.onSpawn?.(child);
  const output: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      clearInterval(probe);
      child.kill('SIGKILL');
      reject(new Error(`${entry} did not start within ${timeoutMs / 1000} s:\n${output.join('').slice(-3000)}`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      clearInterval(probe);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      output.push(chunk.toString());
      if (output.length > 400) output.splice(0, output.length - 400);
      if (ready instanceof RegExp && ready.test(output.join(''))) done();
    };
    const probe = setInterval(() => {
      if (!(ready instanceof RegExp))
        ready().then(
          (ok) => ok && done(),
          () => undefined,
        );
    }, 250);
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      clearInterval(probe);
      reject(new Error(`${entry} exited (${code ?? signal}):\n${output.join('').slice(-3000)}`));
    });
  });
  child.removeAllListeners('exit');
  return { child, output };
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
