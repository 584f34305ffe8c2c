// A worker in its own process for the durability test, so the test can kill -9 it together with the
// server. Usage: node --import tsx durability-worker.ts <address> <bundle-file> <workflow-queue> [activity-queue...]
// Prints "ready" once polling and "activity-started <workflowId> <attempt>" from hangOnFirstAttempt.
import { readFile } from 'node:fs/promises';
import { Context } from '@temporalio/activity';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createActivities } from '../activities.js';

const [address, bundleFile, workflowQueue, ...activityQueues] = process.argv.slice(2);
if (address === undefined || bundleFile === undefined || workflowQueue === undefined) {
  process.stderr.write('usage: durability-worker <address> <bundle-file> <workflow-queue> [activity-queue...]\n');
  process.exit(2);
}

Runtime.install({
  logger: new DefaultLogger('ERROR'),
  telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
});

const activities = {
  ...createActivities(),
  /** Hangs in attempt 1 (its worker gets killed); later attempts report their attempt number. */
  async hangOnFirstAttempt(): Promise<number> {
    const ctx = Context.current();
    process.stdout.write(`activity-started ${ctx.info.workflowExecution?.workflowId ?? '?'} ${ctx.info.attempt}\n`);
    if (ctx.info.attempt === 1) await ctx.sleep(10 * 60_000);
    return ctx.info.attempt;
  },
};

const connection = await NativeConnection.connect({ address });
const code = await readFile(bundleFile, 'utf8');
const workers = [
  await Worker.create({ connection, taskQueue: workflowQueue, workflowBundle: { code }, activities }),
  ...(await Promise.all(activityQueues.map((taskQueue) => Worker.create({ connection, taskQueue, activities })))),
];
process.stdout.write('ready\n');
await Promise.all(workers.map((worker) => worker.run()));
