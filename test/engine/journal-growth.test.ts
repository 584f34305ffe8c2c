// The journal under --db-filename grows by what a change adds, not by what the run already holds: 10,000 signals to
// one workflow cost about the same bytes each from the first to the last, updates too (each run keeps every update
// it has seen in its state, which used to be rewritten on every change), compaction on start shrinks the file, and
// the run carries on after a kill -9 with all of it. Driven by the real SDK client and worker, with the journal's
// file size read between batches (every signal is journaled before it is acknowledged).
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bounded, eventually, historyEvents, uniqueId } from './env.js';
import { DevServerProcess, freePort } from './support/devserver-process.js';
import { finishSignal, incrementUpdate, pushSignal, signalCollector, updatable } from './workflows.js';

let workDir: string;
const servers: DevServerProcess[] = [];

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'engine-journal-growth-'));
});

afterAll(async () => {
  for (const s of servers) await s.kill9().catch(() => undefined);
  if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
});

function startServer(dbFile: string, port: number): DevServerProcess {
  const server = new DevServerProcess({ port, dbFile, logLevel: 'info' });
  servers.push(server);
  return server;
}

const sizeOf = async (file: string): Promise<number> => (await stat(file)).size;

/** Sends signals `from`..`to` (exclusive) to the workflow, a few at a time; each is durable when acknowledged. */
async function signalRange(client: Client, workflowId: string, from: number, to: number): Promise<void> {
  const handle = client.workflow.getHandle(workflowId);
  const CONCURRENCY = 16;
  let next = from;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < to) {
        const i = next++;
        await handle.signal(pushSignal, `item-${i}`);
      }
    }),
  );
}

describe('journal growth', () => {
  it('10,000 signals to one workflow: linear journal, compacted on restart, nothing lost', async () => {
    const dbFile = join(workDir, 'signals.journal');
    const port = await freePort();
    let server = startServer(dbFile, port);
    let client = await server.client();
    const workflowId = uniqueId('ten-thousand-signals');
    const sizes: Record<number, number> = {};
    let historyLength = 0;
    const taskQueue = uniqueId('ten-thousand-signals');
    await server.withWorker(
      async () => {
        // A new worker replays the whole history after the restart: on a loaded machine that takes longer than
        // the default 10 s workflow-task timeout.
        const handle = await client.workflow.start(signalCollector, { taskQueue, workflowId, workflowTaskTimeout: '2m' });
        sizes[0] = await sizeOf(dbFile);
        let sent = 0;
        for (const mark of [1_000, 5_000, 10_000]) {
          await signalRange(client, workflowId, sent, mark);
          sent = mark;
          sizes[mark] = await sizeOf(dbFile);
        }
        // Signals that arrive while a workflow task runs are buffered and written when it completes (describe
        // counts written events, as on Temporal); with the next task handed back in each completion's response
        // one is nearly always running: wait until the worker has taken every signal.
        historyLength = await eventually(
          async () => {
            const length = Number((await handle.describe()).historyLength);
            return length > 10_000 ? length : undefined;
          },
          'every signal to be written to the history',
          60_000,
          250,
        );
      },
      600_000,
      taskQueue,
    );

    const perSignal = {
      first: (sizes[1_000]! - sizes[0]!) / 1_000,
      middle: (sizes[5_000]! - sizes[1_000]!) / 4_000,
      last: (sizes[10_000]! - sizes[5_000]!) / 5_000,
    };
    // Bytes per signal stay about the same (how many signals one workflow task takes varies with the machine's
    // load, hence a factor, not equality) and small: a signal event, a share of a workflow task, small deltas.
    expect(perSignal.last, JSON.stringify(perSignal)).toBeLessThan(perSignal.first * 2);
    expect(perSignal.middle, JSON.stringify(perSignal)).toBeLessThan(perSignal.first * 2);
    expect(perSignal.last, JSON.stringify(perSignal)).toBeLessThan(3_000);
    expect(historyLength).toBeGreaterThan(10_000);

    console.info(`journal bytes per signal: ${JSON.stringify(perSignal)}, at 10,000: ${sizes[10_000]}`);
    // The history as acknowledged (the worker has stopped), then kill -9 and a start on the same file: the
    // journal is compacted into a snapshot on open.
    const acknowledged = await historyEvents(client.workflow.getHandle(workflowId));
    expect(acknowledged.length).toBeGreaterThanOrEqual(historyLength);
    await server.kill9();
    const before = await sizeOf(dbFile);
    server = startServer(dbFile, port);
    // It replays and compacts about 10 MB first: seconds, many more on a loaded machine.
    client = await server.client(180_000);
    const after = await sizeOf(dbFile);
    expect(after).toBeLessThan(before);
    expect(server.text()).toMatch(/journal compacted on open/);

    const handle = client.workflow.getHandle(workflowId);
    const description = await handle.describe();
    expect(description.status.name).toBe('RUNNING');
    const restored = await historyEvents(handle);
    expect(restored.length).toBe(acknowledged.length);
    expect(JSON.stringify(restored)).toBe(JSON.stringify(acknowledged));
    // A new worker replays the whole history from the restarted server and finishes with every item.
    const items = await server.withWorker(
      async () => {
        await handle.signal(finishSignal);
        return bounded(handle.result() as Promise<string[]>, 240_000, 'the workflow to finish after the restart');
      },
      300_000,
      taskQueue,
    );
    expect(items).toHaveLength(10_000);
    expect(new Set(items).size).toBe(10_000);
  }, 1_200_000);

  it('updates: the 300th costs the journal about what the first did', async () => {
    const dbFile = join(workDir, 'updates.journal');
    const server = startServer(dbFile, await freePort());
    const client = await server.client();
    const sizes: number[] = [];
    await server.withWorker(async (taskQueue) => {
      const handle = await client.workflow.start(updatable, { taskQueue, workflowId: uniqueId('many-updates') });
      sizes.push(await sizeOf(dbFile));
      for (let i = 1; i <= 300; i++) {
        expect(await handle.executeUpdate(incrementUpdate, { args: [1] })).toBe(i);
        if (i % 100 === 0) sizes.push(await sizeOf(dbFile));
      }
      await handle.signal(finishSignal);
      expect(await handle.result()).toBe(300);
    }, 240_000);
    const perUpdate = sizes.slice(1).map((s, i) => (s - sizes[i]!) / 100);
    console.info(`journal bytes per update, by hundred: ${JSON.stringify(perUpdate)}`);
    // With the whole state on every line, the third hundred cost several times the first.
    expect(perUpdate[2]!, JSON.stringify(perUpdate)).toBeLessThan(perUpdate[0]! * 1.5);
    expect(perUpdate[2]!, JSON.stringify(perUpdate)).toBeLessThan(5_000);
  }, 300_000);
});
