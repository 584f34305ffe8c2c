// bin/temporal-devserver as a child process the test owns: its stderr is kept (the engine's warnings), it can be
// killed with SIGKILL and started again on the same --db-filename, and the SDK's client and worker connect to it
// like to any Temporal. Every wait is bounded; kill9() is what afterAll calls, so nothing outlives the test.
import { spawn, type ChildProcess } from 'node:child_process';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { bounded, DEVSERVER_PATH, eventually, uniqueId, workflowBundle } from '../env.js';

export { freePort } from '../../../tools/child-processes.js';

export interface DevServerProcessOptions {
  port: number;
  dbFile?: string;
  /** `--dynamic-config-value` settings, `key=value`. */
  dynamicConfig?: string[];
  logLevel?: 'debug' | 'info' | 'warn';
}

export class DevServerProcess {
  private readonly output: string[] = [];
  private readonly exited: Promise<void>;
  private readonly process: ChildProcess;
  private readonly connections: Array<Connection | NativeConnection> = [];

  constructor(readonly opts: DevServerProcessOptions) {
    const args = ['server', 'start-dev', '--port', String(opts.port), '--ip', '127.0.0.1', '--headless'];
    if (opts.dbFile) args.push('--db-filename', opts.dbFile);
    for (const v of opts.dynamicConfig ?? []) args.push('--dynamic-config-value', v);
    args.push('--log-level', opts.logLevel ?? 'warn');
    this.process = spawn(DEVSERVER_PATH, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.process.stdout?.on('data', (chunk: Buffer) => this.output.push(chunk.toString()));
    this.process.stderr?.on('data', (chunk: Buffer) => this.output.push(chunk.toString()));
    this.exited = new Promise((resolve) => {
      if (this.process.exitCode !== null || this.process.signalCode !== null) resolve();
      else this.process.once('exit', () => resolve());
    });
  }

  get address(): string {
    return `127.0.0.1:${this.opts.port}`;
  }

  /** Everything the server wrote (stdout and stderr). */
  text(): string {
    return this.output.join('');
  }

  /** A client, once the server answers GetSystemInfo (retried while it starts — replaying a journal — bounded). */
  async client(timeoutMs = 90_000): Promise<Client> {
    const connection = await eventually(
      async () => {
        const candidate = await Connection.connect({ address: this.address, connectTimeout: 1_000 });
        try {
          await candidate.withDeadline(Date.now() + 2_000, () => candidate.workflowService.getSystemInfo({}));
          return candidate;
        } catch (err) {
          await candidate.close();
          throw err;
        }
      },
      `the server on ${this.address} to answer; output:\n${this.text()}`,
      timeoutMs,
      250,
    );
    this.connections.push(connection);
    return new Client({ connection });
  }

  /** A worker (the test workflows' bundle) on `taskQueue` (a fresh one by default), running until `body` settles (bounded). */
  async withWorker<T>(
    body: (taskQueue: string) => Promise<T>,
    timeoutMs: number,
    taskQueue = uniqueId('journal-tq'),
  ): Promise<T> {
    const connection = await NativeConnection.connect({ address: this.address });
    this.connections.push(connection);
    const worker = await Worker.create({
      connection,
      taskQueue,
      workflowBundle: await workflowBundle(),
      shutdownGraceTime: '2s',
    });
    return worker.runUntil(bounded(body(taskQueue), timeoutMs, `test body on ${taskQueue}`));
  }

  async kill9(): Promise<void> {
    for (const c of this.connections.splice(0)) await c.close().catch(() => undefined);
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGKILL');
    await bounded(this.exited, 10_000, 'temporal-devserver to exit after SIGKILL');
  }
}
