/**
 * Engine benchmark: N workflows, each running one activity and one timer, against bin/temporal-devserver
 * in time-skipping mode and in dev-server (real clock) mode, through the real Temporal SDK.
 * Prints workflows per second and p50/p99 start-to-completion latency per mode.
 *
 *   npm run bench:engine                      # 500 workflows, both modes
 *   npm run bench:engine -- --workflows 1000 --modes time-skipping
 *   ENGINE_BENCH_WORKFLOWS=200 npm run bench:engine
 *
 * Latency is measured from just before the start call to the resolved result; throughput is
 * N divided by the time from the first start to the last completion.
 */
import { parseArgs } from 'node:util';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../test/engine/activities.js';
import { createEnv, uniqueId, workflowBundle, type EnvMode } from '../test/engine/env.js';
import { activityAndTimer } from '../test/engine/workflows.js';

const { values } = parseArgs({
  options: {
    workflows: { type: 'string', short: 'n' },
    modes: { type: 'string' },
    'timer-ms': { type: 'string' },
  },
});

const workflowCount = Number(values.workflows ?? process.env.ENGINE_BENCH_WORKFLOWS ?? 500);
const timerMs = Number(values['timer-ms'] ?? 1_000);
const modes = (values.modes ?? 'time-skipping,dev-server').split(',').map((m) => m.trim()) as EnvMode[];
if (!Number.isInteger(workflowCount) || workflowCount <= 0) throw new Error(`--workflows must be a positive integer`);
for (const mode of modes) {
  if (mode !== 'time-skipping' && mode !== 'dev-server') throw new Error(`unknown mode ${mode}`);
}

interface Figures {
  mode: EnvMode;
  workflows: number;
  failed: number;
  wallMs: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)] ?? Number.NaN;
}

async function runMode(mode: EnvMode): Promise<Figures> {
  const env: TestWorkflowEnvironment = await createEnv(mode);
  try {
    const taskQueue = uniqueId('bench');
    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities: createActivities(),
      maxConcurrentWorkflowTaskExecutions: 100,
      maxConcurrentActivityTaskExecutions: 200,
      maxConcurrentWorkflowTaskPolls: 50,
      maxConcurrentActivityTaskPolls: 20,
    });
    // One unlock for the whole batch (instead of the TimeSkippingClient's unlock/lock around every
    // result() call), so the figures measure the server rather than 2 extra RPCs per workflow.
    const client = new Client({ connection: env.connection, namespace: env.namespace ?? 'default' });
    const testService = env.connection.testService;
    if (mode === 'time-skipping') await testService?.unlockTimeSkipping({});
    return await worker.runUntil(async () => {
      const latencies: number[] = [];
      let failed = 0;
      const firstStart = performance.now();
      await Promise.all(
        Array.from({ length: workflowCount }, async (_, i) => {
          const startedAt = performance.now();
          try {
            const handle = await client.workflow.start(activityAndTimer, {
              taskQueue,
              workflowId: `${taskQueue}-${i}`,
              args: [timerMs],
            });
            if ((await handle.result()) !== 'bench') failed += 1;
            latencies.push(performance.now() - startedAt);
          } catch (err) {
            failed += 1;
            if (failed === 1) process.stderr.write(`first failure in ${mode}: ${String(err)}\n`);
          }
        }),
      );
      const wallMs = performance.now() - firstStart;
      if (mode === 'time-skipping') await testService?.lockTimeSkipping({});
      latencies.sort((a, b) => a - b);
      return {
        mode,
        workflows: workflowCount,
        failed,
        wallMs,
        perSecond: (workflowCount - failed) / (wallMs / 1000),
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99),
      };
    });
  } finally {
    await env.teardown();
  }
}

function printTable(rows: Figures[]): void {
  const header = ['mode', 'workflows', 'failed', 'wall s', 'workflows/s', 'p50 ms', 'p99 ms'];
  const lines = rows.map((r) => [
    r.mode,
    String(r.workflows),
    String(r.failed),
    (r.wallMs / 1000).toFixed(2),
    r.perSecond.toFixed(1),
    r.p50Ms.toFixed(0),
    r.p99Ms.toFixed(0),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const format = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ');
  process.stdout.write(`${format(header)}\n${format(widths.map((w) => '-'.repeat(w)))}\n`);
  for (const line of lines) process.stdout.write(`${format(line)}\n`);
}

process.stdout.write(
  `engine benchmark: ${workflowCount} workflows x (1 activity + 1 timer of ${timerMs} ms), modes: ${modes.join(', ')}\n`,
);
const rows: Figures[] = [];
for (const mode of modes) rows.push(await runMode(mode));
printTable(rows);
if (rows.some((r) => r.failed > 0)) process.exitCode = 1;
