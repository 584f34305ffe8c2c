// Workflows of workflow-info.test.ts: what workflowInfo() reports (history size, continue-as-new suggestion,
// root, priority, build id) and what the server keeps about a run (user metadata, priority of children and
// activities).
import {
  condition,
  defineQuery,
  defineSignal,
  executeChild,
  proxyActivities,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
  type RootWorkflowInfo,
} from '@temporalio/workflow';
import type { Priority } from '@temporalio/common';

/** Activities the info tests register themselves (workflow-info.test.ts). */
export interface InfoActivities {
  activityPriority(): Promise<Priority | undefined>;
}

export const infoReleaseSignal = defineSignal('infoRelease');
export const currentBuildIdQuery = defineQuery<string>('currentBuildId');

/** workflowInfo().historySize seen by the first workflow task and by the task after a short timer. */
export async function historySizeBeforeAndAfterTimer(): Promise<[number, number]> {
  const sizes: number[] = [workflowInfo().historySize];
  await sleep(1);
  sizes.push(workflowInfo().historySize);
  return [sizes[0]!, sizes[1]!];
}

export interface SuggestionSeen {
  /** History length of the first task that suggested continue-as-new (0: none did). */
  suggestedAtLength: number;
  /** History length of the task before it. */
  previousLength: number;
  reasons: string[];
  historySize: number;
}

/** Grows the history by batches of `batch` timers until a task suggests continue-as-new, or `maxEvents` is passed. */
export async function growUntilContinueAsNewSuggested(batch: number, maxEvents: number): Promise<SuggestionSeen> {
  let previousLength = 0;
  for (;;) {
    const info = workflowInfo();
    if (info.continueAsNewSuggested) {
      return {
        suggestedAtLength: info.historyLength,
        previousLength,
        reasons: [...(info.suggestedContinueAsNewReasons ?? [])],
        historySize: info.historySize,
      };
    }
    if (info.historyLength >= maxEvents) {
      return { suggestedAtLength: 0, previousLength: info.historyLength, reasons: [], historySize: info.historySize };
    }
    previousLength = info.historyLength;
    await Promise.all(Array.from({ length: batch }, () => sleep(1)));
  }
}

export interface RootReport {
  root: RootWorkflowInfo | undefined;
  child?: RootReport;
}

/** Reports workflowInfo().root at each level of a chain of `depth` children below this run. */
export async function rootChain(depth: number): Promise<RootReport> {
  const root = workflowInfo().root;
  if (depth === 0) return { root };
  return { root, child: await executeChild(rootChain, { args: [depth - 1] }) };
}

/** Waits for infoRelease; a child that stays open so it can be described. */
export async function waitForInfoRelease(): Promise<RootWorkflowInfo | undefined> {
  let released = false;
  setHandler(infoReleaseSignal, () => {
    released = true;
  });
  await condition(() => released);
  return workflowInfo().root;
}

/** Starts `waitForInfoRelease` as a child with the given id and returns its answer. */
export async function parentOfWaitingChild(childId: string): Promise<RootWorkflowInfo | undefined> {
  return executeChild(waitForInfoRelease, { workflowId: childId });
}

export interface PriorityReport {
  own: Priority | undefined;
  child?: PriorityReport;
  activity?: Priority | undefined;
}

/**
 * Reports its own workflowInfo().priority; at the top level also a child's (started with `childPriority`) and an
 * activity's (scheduled with `activityPriority`), as the activity saw it.
 */
export async function priorityReporter(childPriority?: Priority, activityPriority?: Priority): Promise<PriorityReport> {
  const own = workflowInfo().priority;
  if (!childPriority) return { own };
  const child = await executeChild(priorityReporter, { priority: childPriority });
  const { activityPriority: readActivityPriority } = proxyActivities<InfoActivities>({
    startToCloseTimeout: '20s',
    priority: activityPriority,
  });
  return { own, child, activity: await readActivityPriority() };
}

/** Starts a child with static summary / details and waits for infoRelease; returns the child's id. */
export async function parentWithDescribedChild(childId: string): Promise<string> {
  const child = await startChild(waitForInfoRelease, {
    workflowId: childId,
    staticSummary: 'child summary',
    staticDetails: 'child details',
  });
  await child.result();
  return child.workflowId;
}

/** Answers currentBuildIdQuery with workflowInfo().currentBuildId; after infoRelease it waits until terminated. */
export async function buildIdReporter(): Promise<void> {
  let released = false;
  setHandler(currentBuildIdQuery, () => workflowInfo().currentBuildId ?? '');
  setHandler(infoReleaseSignal, () => {
    released = true;
  });
  await condition(() => released);
  await condition(() => false);
}
