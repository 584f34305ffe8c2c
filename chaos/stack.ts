// The split deployment as four processes on fixed loopback ports, each of which can be killed with SIGKILL and
// started again on the same port (clients reconnect to the same address): the engine (bin/temporal-devserver
// with its journal under the run's directory), the sandbox PGs (src/sandbox/main.ts, state under its DATA_DIR),
// the API (src/api/server.ts) and the worker (worker.ts), the last two on a Postgres schema of the run's own.
// The chaos suite runs one of each; bench/scale.ts runs several APIs and workers (instances 0..N-1, each API on a
// port of its own) against the one engine, sandbox and schema.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, portOpen, startProcess } from '../tools/child-processes.js';

export const PROCESS_NAMES = ['engine', 'sandbox', 'api', 'worker'] as const;
export type ProcessName = (typeof PROCESS_NAMES)[number];

export interface StackOptions {
  /** Postgres server URL (a schema of the run's own is created on it and dropped by close) */
  readonly postgresUrl: string;
  /** environment merged over every paygate process's (API and worker) */
  readonly extraEnv?: Record<string, string>;
  /** names the run's schema, directory and tokens (default `chaos`) */
  readonly label?: string;
}

/** A process of the stack: its name and which copy (the engine and the sandbox run once: instance 0). */
const keyOf = (name: ProcessName, instance: number) => (instance === 0 ? name : `${name}#${instance}`);

const MAX_ERROR_LINES = 40;

export class Stack {
  readonly adminToken: string;
  readonly sandboxToken: string;
  readonly schema: string;
  readonly starts: Record<ProcessName, number> = { engine: 0, sandbox: 0, api: 0, worker: 0 };
  /** the running process of each name#instance */
  private readonly children = new Map<string, ChildProcess>();
  /** what restartExited starts again: every name#instance started once */
  private readonly everStarted = new Map<string, { name: ProcessName; instance: number }>();
  /** every child ever started: close() SIGKILLs whatever of them still runs */
  private readonly everyChild = new Set<ChildProcess>();
  private readonly lastOutput = new Map<string, string[]>();
  /** error-level log lines of every process this stack started, the first MAX_ERROR_LINES */
  readonly errorLines: string[] = [];
  /** the port of each API instance, kept across restarts (instance 0: ports.api) */
  private readonly apiPorts = new Map<number, number>();
  private closed = false;

  private constructor(
    readonly options: StackOptions,
    readonly dir: string,
    readonly ports: Record<'engine' | 'sandbox' | 'api', number>,
  ) {
    const label = options.label ?? 'chaos';
    this.adminToken = `${label}-admin-${randomBytes(12).toString('hex')}`;
    this.sandboxToken = `${label}-sandbox-${randomBytes(12).toString('hex')}`;
    this.schema = `${label}_${randomBytes(5).toString('hex')}`;
    this.apiPorts.set(0, ports.api);
  }

  static async open(options: StackOptions): Promise<Stack> {
    const dir = await mkdtemp(join(tmpdir(), `paygate-${options.label ?? 'chaos'}-`));
    const ports = { engine: await freePort(), sandbox: await freePort(), api: await freePort() };
    const stack = new Stack(options, dir, ports);
    const admin = new pg.Client({ connectionString: options.postgresUrl });
    await admin.connect();
    try {
      await admin.query(`create schema ${stack.schema}`);
    } finally {
      await admin.end();
    }
    return stack;
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.ports.api}`;
  }
  /** the address of one API instance (started, or about to be) */
  apiUrlOf(instance: number): string {
    return `http://127.0.0.1:${this.apiPorts.get(instance) ?? Number.NaN}`;
  }
  get sandboxUrl(): string {
    return `http://127.0.0.1:${this.ports.sandbox}`;
  }
  get engineAddress(): string {
    return `127.0.0.1:${this.ports.engine}`;
  }
  /** the run's schema as the search path of a Postgres URL */
  get databaseUrl(): string {
    const url = this.options.postgresUrl;
    return `${url}${url.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${this.schema}`)}`;
  }

  pid(name: ProcessName, instance = 0): number | undefined {
    return this.children.get(keyOf(name, instance))?.pid;
  }

  private paygateEnv(name: 'api' | 'worker', instance: number): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(this.apiPorts.get(instance) ?? this.ports.api),
      HOST: '127.0.0.1',
      DATA_DIR: join(this.dir, keyOf(name, instance)),
      DATABASE_URL: this.databaseUrl,
      TEMPORAL_ADDRESS: this.engineAddress,
      TEMPORAL_NAMESPACE: 'default',
      ADMIN_TOKEN: this.adminToken,
      ENCRYPTION_KEYS: this.encryptionKeys,
      PAYGATE_SANDBOX: 'true',
      PUBLIC_BASE_URL: this.apiUrl,
      SANDBOX_GATEWAY_URL: this.sandboxUrl,
      SANDBOX_TOKEN: this.sandboxToken,
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      ...this.options.extraEnv,
    };
  }
  private readonly encryptionKeys = `chaos:${randomBytes(32).toString('base64')}`;
  private readonly sandboxSecret = randomBytes(24).toString('base64url');

  /** Starts one process (on its fixed port) and waits until it is ready; `instance` > 0: another API or worker. */
  async start(name: ProcessName, instance = 0): Promise<void> {
    if (this.closed) throw new Error('the stack is closed');
    if (instance !== 0 && name !== 'api' && name !== 'worker') throw new Error(`one ${name} per stack`);
    const key = keyOf(name, instance);
    if (name === 'api' && !this.apiPorts.has(instance)) this.apiPorts.set(instance, await freePort());
    const apiPort = this.apiPorts.get(instance) ?? this.ports.api;
    const dataDir = join(this.dir, key);
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    let started: Awaited<ReturnType<typeof startProcess>>;
    // killAll reaches a process that is still starting too
    const onSpawn = (child: ChildProcess) => {
      this.everyChild.add(child);
      if (this.closed) child.kill('SIGKILL');
    };
    const timeoutMs = 120_000;
    if (name === 'engine') {
      started = await startProcess(
        'bin/temporal-devserver',
        [
          'server',
          'start-dev',
          '--port',
          String(this.ports.engine),
          '--ip',
          '127.0.0.1',
          '--namespace',
          'default',
          '--db-filename',
          join(dataDir, 'temporal.db'),
          '--headless',
        ],
        { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
        () => portOpen(this.ports.engine),
        { tsx: false, timeoutMs, onSpawn },
      );
    } else if (name === 'sandbox') {
      started = await startProcess(
        'src/sandbox/main.ts',
        [],
        {
          PATH: process.env.PATH ?? '',
          SANDBOX_PORT: String(this.ports.sandbox),
          SANDBOX_HOST: '127.0.0.1',
          SANDBOX_TOKEN: this.sandboxToken,
          SANDBOX_SECRET: this.sandboxSecret,
          DATA_DIR: dataDir,
          LOG_LEVEL: 'warn',
        },
        () => portOpen(this.ports.sandbox),
        { timeoutMs, onSpawn },
      );
    } else if (name === 'api') {
      started = await startProcess(
        'src/api/server.ts',
        [],
        this.paygateEnv('api', instance),
        async () => {
          // listening is enough: /health also asks the engine, which may be the one being restarted
          return portOpen(apiPort);
        },
        { timeoutMs, onSpawn },
      );
    } else {
      started = await startProcess(
        'worker.ts',
        [],
        { ...this.paygateEnv('worker', instance), LOG_LEVEL: 'info' },
        /worker running/,
        {
          timeoutMs,
          onSpawn,
        },
      );
    }
    this.children.set(key, started.child);
    this.lastOutput.set(key, started.output);
    // the process's error-level log lines (an answer 9500 above all), for the run's report: the output itself is
    // kept only in memory, its last chunks
    const keepErrors = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) {
        // an answer of the catalog (an outage told as 9481 / 9502 / 9504 / 9503) is routine here: the rest is kept
        const routine = /"type":"ApiError"/.test(line) && !/"error_code":"INTERNAL_ERROR"/.test(line);
        if (this.errorLines.length < MAX_ERROR_LINES && /"level":(50|60)\b/.test(line) && !routine)
          this.errorLines.push(`${key}: ${line.slice(0, 3_000)}`);
      }
    };
    started.child.stdout?.on('data', keepErrors);
    started.child.stderr?.on('data', keepErrors);
    this.everStarted.set(key, { name, instance });
    this.starts[name]++;
  }

  /** SIGKILLs one process and waits until it is gone. */
  async kill9(name: ProcessName, instance = 0): Promise<void> {
    const key = keyOf(name, instance);
    const child = this.children.get(key);
    this.children.delete(key);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }

  /** The last output of one process (name#instance as in `crashed`), for a run that failed before its report. */
  outputTail(name: ProcessName, instance = 0, chars = 3_000): string {
    return (this.lastOutput.get(keyOf(name, instance)) ?? []).join('').slice(-chars);
  }

  /** The processes that exited without being killed by the run (a crash is a finding); name: name#instance. */
  crashed(): { name: string; code: number | null; output: string }[] {
    const out: { name: string; code: number | null; output: string }[] = [];
    for (const [name, child] of this.children) {
      if (child.exitCode !== null || child.signalCode !== null) {
        out.push({ name, code: child.exitCode, output: (this.lastOutput.get(name) ?? []).join('').slice(-2000) });
      }
    }
    return out;
  }

  /** Starts again every process that is not running (one that crashed on its own). */
  async restartExited(): Promise<string[]> {
    const restarted: string[] = [];
    for (const [key, { name, instance }] of this.everStarted) {
      const child = this.children.get(key);
      if (child && child.exitCode === null && child.signalCode === null) continue;
      await this.start(name, instance);
      restarted.push(key);
    }
    return restarted;
  }

  /** SIGKILLs every process the stack ever started (synchronous: safe in an exit handler). */
  killAll(): void {
    for (const child of this.everyChild) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }

  /** Kills everything, drops the schema and the run's directory (CHAOS_KEEP_SCHEMAS=1 keeps the schema to look into). */
  async close(): Promise<void> {
    this.closed = true;
    this.killAll();
    if (process.env.CHAOS_KEEP_SCHEMAS === '1') {
      process.stderr.write(`chaos: kept the schema ${this.schema}\n`);
      await rm(this.dir, { recursive: true, force: true });
      return;
    }
    const admin = new pg.Client({ connectionString: this.options.postgresUrl });
    try {
      await admin.connect();
      await admin.query(`drop schema if exists ${this.schema} cascade`);
    } catch {
      // the server went away: nothing to drop
    } finally {
      await admin.end().catch(() => undefined);
    }
    await rm(this.dir, { recursive: true, force: true });
  }
}
