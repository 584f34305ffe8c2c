// The dev-server clock that `--clock-control` lets a caller advance (paygate's sandbox clock): TestService's
// Sleep / SleepUntil move time forward, fire the timers due on the way in order (each at its own due time, once
// the work of the previous one settled), answer once nothing is outstanding, never move time back, and the
// offset is journaled: after kill -9 and a restart on the same --db-filename the clock carries on from there.
// Engine-specific (a real Temporal has no advanceable dev-server clock): it launches bin/temporal-devserver itself.
import { freePort } from '../../tools/child-processes.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { type InternalConnectionOptions, InternalConnectionOptionsSymbol } from '@temporalio/client/lib/connection.js';
import { msToTs } from '@temporalio/common/lib/time.js';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bounded, DEVSERVER_PATH, eventually, historyEvents, uniqueId, workflowBundle } from './env.js';
import { sleeper } from './workflows.js';

const HOUR_MS = 3600_000;
const ADVANCE_TIMEOUT_MS = 30_000;

let workDir: string;
let dbFile: string;
let port: number;
let server: ChildProcess | undefined;
const connections: Connection[] = [];

function startServer(clockControl = true): ChildProcess {
  const args = ['server', 'start-dev', '--port', String(port), '--namespace', 'default', '--ip', '127.0.0.1'];
  args.push('--db-filename', dbFile, '--headless', '--log-level', 'warn');
  if (clockControl) args.push('--clock-control');
  server = spawn(DEVSERVER_PATH, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  return server;
}

async function killServer(): Promise<void> {
  const child = server;
  server = undefined;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await bounded(exited, 10_000, 'the server to exit after SIGKILL');
}

async function connect(): Promise<Connection> {
  const connection = await eventually(
    async () => {
      // the TestService stub, as @temporalio/testing asks for it
      const options: InternalConnectionOptions = {
        address: `127.0.0.1:${port}`,
        connectTimeout: 1_000,
        [InternalConnectionOptionsSymbol]: { supportsTestService: true },
      };
      const candidate = await Connection.connect(options);
      try {
        await candidate.withDeadline(Date.now() + 2_000, () => candidate.workflowService.getSystemInfo({}));
        return candidate;
      } catch (err) {
        await candidate.close();
        throw err;
      }
    },
    'the server to answer',
    30_000,
    250,
  );
  connections.push(connection);
  return connection;
}

async function serverNow(connection: Connection): Promise<number> {
  const { time } = await connection.testService!.getCurrentTime({});
  return Number(time?.seconds ?? 0) * 1000 + Math.floor((time?.nanos ?? 0) / 1e6);
}

function advance(connection: Connection, ms: number): Promise<unknown> {
  return connection.withDeadline(Date.now() + ADVANCE_TIMEOUT_MS, () => connection.testService!.sleep({ duration: msToTs(ms) }));
}

function tsMs(t: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  return Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);
}

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'engine-sandbox-clock-'));
  dbFile = join(workDir, 'temporal.db');
  port = await freePort();
});

afterAll(async () => {
  for (const connection of connections) await connection.close().catch(() => undefined);
  await killServer().catch(() => undefined);
  if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
});

describe('an advanceable dev-server clock (--clock-control)', () => {
  it('fires timers in order at their due times, settles, never goes back, and survives kill -9', async () => {
    startServer();
    let connection = await connect();
    const client = new Client({ connection, namespace: 'default' });
    const taskQueue = uniqueId('clock');
    const nativeConnection = await NativeConnection.connect({ address: `127.0.0.1:${port}` });
    const worker = await Worker.create({
      connection: nativeConnection,
      namespace: 'default',
      taskQueue,
      workflowBundle: await workflowBundle(),
      shutdownGraceTime: '1s',
    });
    const running = worker.run();
    try {
      // Without time skipping there is nothing to lock or unlock.
      await expect(connection.testService!.unlockTimeSkipping({})).rejects.toThrow(/dev-server mode/);

      const before = await serverNow(connection);
      expect(Math.abs(before - Date.now())).toBeLessThan(5_000);
      const durations = [3 * HOUR_MS, HOUR_MS, 2 * HOUR_MS, 10 * HOUR_MS];
      const handles = await Promise.all(
        durations.map((ms) => client.workflow.start(sleeper, { taskQueue, workflowId: uniqueId('sleeper'), args: [ms] })),
      );
      // every timer is started before the clock moves
      await eventually(async () => {
        for (const h of handles) {
          if (!(await historyEvents(h)).some((e) => e.timerStartedEventAttributes)) return undefined;
        }
        return true;
      }, 'the timers to start');

      await advance(connection, 5 * HOUR_MS);
      const after = await serverNow(connection);
      expect(after).toBeGreaterThanOrEqual(before + 5 * HOUR_MS);
      expect(after).toBeLessThan(before + 5 * HOUR_MS + 60_000);

      // Settled when the advance answered: the three due runs are complete already, the fourth still sleeps.
      const described = await Promise.all(handles.map((h) => h.describe()));
      expect(described.map((d) => d.status.name)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED', 'RUNNING']);
      // Each timer fired at its own due time (not all at the end of the advance), so in due order.
      const firedAt: number[] = [];
      for (const [i, h] of handles.slice(0, 3).entries()) {
        const events = await historyEvents(h);
        const started = events.find((e) => e.timerStartedEventAttributes)!;
        const fired = events.find((e) => e.timerFiredEventAttributes)!;
        const late = tsMs(fired.eventTime) - (tsMs(started.eventTime) + durations[i]!);
        expect(late, `timer ${i} fired ${late} ms after its due time`).toBeGreaterThanOrEqual(0);
        expect(late).toBeLessThan(30_000);
        firedAt.push(tsMs(fired.eventTime));
        // the workflow saw the same time pass
        expect(await h.result()).toBeGreaterThanOrEqual(durations[i]!);
      }
      expect(firedAt[1]!).toBeLessThan(firedAt[2]!);
      expect(firedAt[2]!).toBeLessThan(firedAt[0]!);

      // A time in the past changes nothing.
      await connection.withDeadline(Date.now() + ADVANCE_TIMEOUT_MS, () =>
        connection.testService!.sleepUntil({ timestamp: msToTs(before) }),
      );
      const unchanged = await serverNow(connection);
      expect(unchanged).toBeGreaterThanOrEqual(after);
      expect(unchanged).toBeLessThan(after + 60_000);

      // kill -9 and a restart on the same journal: the clock carries on from where it was.
      await killServer();
      startServer();
      connection = await connect();
      const restarted = await serverNow(connection);
      expect(restarted).toBeGreaterThanOrEqual(after);
      expect(restarted).toBeLessThan(after + 120_000);

      // The fourth timer (10 h after the start) fires after the next advance, from the restored clock.
      await advance(connection, 6 * HOUR_MS);
      const restartedClient = new Client({ connection, namespace: 'default' });
      const last = restartedClient.workflow.getHandle(handles[3]!.workflowId);
      expect((await last.describe()).status.name).toBe('COMPLETED');
      expect(await bounded(last.result(), 20_000, 'the last sleeper')).toBeGreaterThanOrEqual(10 * HOUR_MS);
    } finally {
      worker.shutdown();
      await bounded(running, 15_000, 'the worker to stop').catch(() => undefined);
      await nativeConnection.close().catch(() => undefined);
    }
  }, 120_000);

  it('without --clock-control the dev server keeps the real clock and serves no TestService', async () => {
    await killServer();
    startServer(false);
    const connection = await connect();
    await expect(connection.testService!.getCurrentTime({})).rejects.toThrow(/UNIMPLEMENTED|not implemented/i);
  }, 60_000);
});
