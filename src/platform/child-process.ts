// The helper processes `npm start` runs beside its main one (the embedded database, the sandbox PGs), so the heavy
// parts of one machine's install use more than one core. Both sides of one small contract:
//
// - the parent (`startChild`) spawns a node entry with an IPC channel, waits for its `ready` message, can ask it
//   things (`request`: the sandbox clock's time) and stops it by closing the channel, with SIGKILL when it does not
//   exit in time;
// - the child (`runAsChild`) exits when that channel closes: when the parent stops it, and when the parent dies,
//   even by SIGKILL (the kernel closes the parent's end), so no helper outlives the process that started it.
//   A signal from the terminal (Ctrl-C reaches the whole process group) does not stop it at once: the parent stops
//   its helpers in order after its own work, so the child waits for that, 10 s at most.
// And the parent's rule for a helper that ends on its own (`exitWhenHelperEnds`): every entry point that has helpers
// (npm start, the standalone API and worker on PGlite) shuts down and exits 1.
import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** How long a child may take to be ready (PGlite's first start creates its cluster; a loaded machine is slow). */
export const CHILD_READY_TIMEOUT_MS = 120_000;
/** How long a stopped child may take to close in order before SIGKILL. */
export const CHILD_STOP_TIMEOUT_MS = 15_000;
/** How long a child that got SIGINT / SIGTERM waits for its parent to stop it. */
const CHILD_SIGNAL_GRACE_MS = 10_000;
/** How long the parent may take to shut down after a helper died, before it exits all the same. */
const HELPER_DEATH_GRACE_MS = 10_000;

type ParentMessage = { readonly type: 'request'; readonly id: number; readonly body: unknown };
type ChildMessage =
  | { readonly type: 'ready'; readonly payload: unknown }
  | { readonly type: 'answer'; readonly id: number; readonly value: unknown }
  | { readonly type: 'refused'; readonly id: number; readonly message: string };

export interface ChildHandle<Ready> {
  readonly name: string;
  readonly pid: number;
  /** what the child said when it was ready */
  readonly ready: Ready;
  /** settles when the process ends, for whatever reason (stop() included), with how it ended */
  readonly exited: Promise<string>;
  /** sends the child a request and resolves with its answer */
  request<T>(body: unknown): Promise<T>;
  /** closes the channel (the child closes in order and exits); SIGKILL after CHILD_STOP_TIMEOUT_MS */
  stop(): Promise<void>;
}

/**
 * The entry file `relative` (without extension) to the module at `moduleUrl`, with that module's extension: `.ts`
 * when paygate runs through tsx (npm start, tests), `.js` when it runs compiled.
 */
export function entryFile(moduleUrl: string, relative: string): string {
  const here = fileURLToPath(moduleUrl);
  return path.resolve(path.dirname(here), `${relative}${path.extname(here)}`);
}

/** What a helper inherits of this process's environment: enough to run node, none of paygate's secrets. */
export function helperEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'TZ', 'LANG', 'NODE_OPTIONS']) {
    if (process.env[name] !== undefined) env[name] = process.env[name];
  }
  return { ...env, ...extra };
}

/** Node's arguments to run `entry`: TypeScript through tsx's loader, resolved from paygate's own dependencies. */
function nodeArguments(entry: string): string[] {
  if (!entry.endsWith('.ts')) return [entry];
  const loader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return ['--import', loader, entry];
}

function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `killed by ${signal}` : `exit code ${code}`;
}

/**
 * Spawns `entry` (a file: see entryFile) as a helper process and resolves once it said it is ready. Its stdout
 * and stderr are this process's. A child that exits or does not get ready in time rejects (and is killed).
 */
export async function startChild<Ready>(opts: {
  readonly name: string;
  readonly entry: string;
  readonly args?: readonly string[];
  /** the child's environment (helperEnvironment() by default; never secrets on the command line: `ps` shows it) */
  readonly env?: NodeJS.ProcessEnv;
  readonly readyTimeoutMs?: number;
}): Promise<ChildHandle<Ready>> {
  const child: ChildProcess = spawn(process.execPath, [...nodeArguments(opts.entry), ...(opts.args ?? [])], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: opts.env ?? helperEnvironment(),
  });
  // A process that exits without stopping its children closes their channel all the same: they close in order then.
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(describeExit(code, signal))));

  const answers = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  let ready: (payload: unknown) => void;
  const readyMessage = new Promise<unknown>((resolve) => {
    ready = resolve;
  });
  child.on('message', (message: ChildMessage) => {
    if (message.type === 'ready') ready(message.payload);
    else {
      const waiting = answers.get(message.id);
      answers.delete(message.id);
      if (message.type === 'answer') waiting?.resolve(message.value);
      else waiting?.reject(new Error(`${opts.name}: ${message.message}`));
    }
  });
  void exited.then((how) => {
    for (const waiting of answers.values()) waiting.reject(new Error(`${opts.name} ended (${how})`));
    answers.clear();
  });

  const timeoutMs = opts.readyTimeoutMs ?? CHILD_READY_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  const payload = await Promise.race([
    readyMessage,
    exited.then((how) => Promise.reject(new Error(`${opts.name} ended before it was ready (${how}); its output is above`))),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${opts.name} was not ready within ${timeoutMs / 1000} s`)), timeoutMs);
    }),
  ]).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw err;
  });
  clearTimeout(timer);

  let nextId = 0;
  let stopping: Promise<void> | undefined;
  return {
    name: opts.name,
    pid: child.pid!,
    ready: payload as Ready,
    exited,
    request<T>(body: unknown): Promise<T> {
      if (!child.connected) return Promise.reject(new Error(`${opts.name} is not running`));
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        answers.set(id, { resolve: resolve as (value: unknown) => void, reject });
        child.send({ type: 'request', id, body } satisfies ParentMessage);
      });
    },
    stop() {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        if (child.connected) child.disconnect();
        else child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), CHILD_STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(killer);
      })();
      return stopping;
    },
  };
}

/**
 * The child's side: answers the parent's requests with `onRequest`, and when the parent lets go of it (stop, or
 * its death) runs `close` and exits. Returns the function that tells the parent it is ready.
 */
export function runAsChild(opts: {
  readonly name: string;
  readonly close: () => Promise<void>;
  readonly onRequest?: (body: unknown) => unknown;
}): { ready(payload: unknown): void } {
  if (!process.send) {
    process.stderr.write(`${opts.name}: started by npm start (src/main.ts), not on its own\n`);
    process.exit(1);
  }
  const send = (message: ChildMessage) => {
    if (process.connected) process.send!(message);
  };
  let closing = false;
  const closeAndExit = () => {
    if (closing) return;
    closing = true;
    const hard = setTimeout(() => process.exit(1), CHILD_STOP_TIMEOUT_MS - 1_000);
    hard.unref();
    opts.close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`${opts.name}: error while closing: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('disconnect', closeAndExit);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => setTimeout(closeAndExit, CHILD_SIGNAL_GRACE_MS).unref());
  }
  process.on('message', (message: ParentMessage) => {
    if (message.type !== 'request') return;
    Promise.resolve()
      .then(() => opts.onRequest?.(message.body))
      .then(
        (value) => send({ type: 'answer', id: message.id, value }),
        (err: unknown) => send({ type: 'refused', id: message.id, message: err instanceof Error ? err.message : String(err) }),
      );
  });
  return { ready: (payload) => send({ type: 'ready', payload }) };
}

/**
 * A helper process that ends while its parent is not shutting down (killed, crashed) takes the parent down: one
 * fatal log line naming it, then `shutdown` (the parent's own, bounded by HELPER_DEATH_GRACE_MS), then exit 1. A
 * parent without its database or its sandbox PGs would answer every call with an error for ever instead.
 */
export function exitWhenHelperEnds(
  helper: { readonly name: string; readonly exited: Promise<string> },
  parent: {
    readonly logger: { fatal(obj: object, msg: string): void };
    /** true once the parent's own shutdown began: its helpers end as part of it */
    readonly shuttingDown: () => boolean;
    readonly shutdown: () => Promise<unknown>;
  },
): void {
  void helper.exited.then((how) => {
    if (parent.shuttingDown()) return;
    parent.logger.fatal({ process: helper.name, how }, 'a paygate process ended: shutting down');
    setTimeout(() => process.exit(1), HELPER_DEATH_GRACE_MS).unref();
    void parent
      .shutdown()
      .catch(() => undefined)
      .finally(() => process.exit(1));
  });
}
