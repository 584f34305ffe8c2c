// Workflow definitions of the engine conformance suite (bundled once per test file).
import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowFailure,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  defineUpdate,
  executeChild,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  startChild,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { EngineActivities } from './activities.js';
import { INT_KEY, KEYWORD_KEY } from './search-attributes.js';

const DAY_MS = 24 * 60 * 60 * 1000;

const { echo } = proxyActivities<EngineActivities>({ startToCloseTimeout: '20s' });
const local = proxyLocalActivities<EngineActivities>({ startToCloseTimeout: '20s' });

export const pushSignal = defineSignal<[string]>('push');
export const finishSignal = defineSignal('finish');
export const releaseSignal = defineSignal('release');
export const itemsQuery = defineQuery<string[]>('items');
export const countQuery = defineQuery<number>('count');
export const incrementUpdate = defineUpdate<number, [number]>('increment');
export const waitForReleaseUpdate = defineUpdate<string>('waitForRelease');
export const throwingUpdate = defineUpdate<string, [string]>('throwing');

export async function returnValue<T>(value: T): Promise<T> {
  return value;
}

/** Sleeps `ms` and returns the workflow-clock time that passed (virtual in time-skipping mode). */
export async function sleeper(ms: number): Promise<number> {
  const startedAt = Date.now();
  await sleep(ms);
  return Date.now() - startedAt;
}

/** Returns whether `release` arrived within `timeoutMs` (condition with a timeout). */
export async function conditionWithTimeout(timeoutMs: number): Promise<boolean> {
  let released = false;
  setHandler(releaseSignal, () => {
    released = true;
  });
  return condition(() => released, timeoutMs);
}

export async function failWithType(errorType: string): Promise<never> {
  throw ApplicationFailure.create({ message: `workflow failed with ${errorType}`, type: errorType, nonRetryable: true });
}

/** Collects `push` signals until `finish`; `items` queries them at any point, even after close. */
export async function signalCollector(): Promise<string[]> {
  const items: string[] = [];
  let finished = false;
  setHandler(pushSignal, (item) => {
    items.push(item);
  });
  setHandler(finishSignal, () => {
    finished = true;
  });
  setHandler(itemsQuery, () => items);
  await condition(() => finished);
  return items;
}

/** Runs one activity with the given options; the activity outcome is the workflow outcome. */
export async function runActivity(name: keyof EngineActivities, args: unknown[], options: ActivityOptions): Promise<unknown> {
  const activities = proxyActivities<Record<string, (...a: unknown[]) => Promise<unknown>>>(options);
  const activity = activities[name];
  if (activity === undefined) throw ApplicationFailure.nonRetryable(`no activity ${name}`);
  return activity(...args);
}

/** Starts a heartbeating activity, cancels it after `cancelAfterMs` and waits for the cancellation to complete. */
export async function cancelHeartbeatingActivity(cancelAfterMs: number): Promise<string> {
  const { stall } = proxyActivities<EngineActivities>({
    startToCloseTimeout: '1 minute',
    heartbeatTimeout: '2s',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { maximumAttempts: 1 },
  });
  const scope = new CancellationScope();
  const running = scope.run(() => stall(100));
  await sleep(cancelAfterMs);
  scope.cancel();
  try {
    await running;
    return 'completed';
  } catch (err) {
    return isCancellation(err) ? 'cancelled' : `failed: ${String(err)}`;
  }
}

/** Races an activity taking real time against a long timer: the timer must not be skipped past the activity. */
export async function raceActivityAndTimer(activityMs: number, timerMs: number): Promise<string> {
  const { busyFor } = proxyActivities<EngineActivities>({ startToCloseTimeout: '1 minute' });
  return Promise.race([busyFor(activityMs), sleep(timerMs).then(() => 'timer')]);
}

/** One activity and one timer: the benchmark's unit of work. */
export async function activityAndTimer(timerMs: number): Promise<string> {
  const value = await echo('bench');
  await sleep(timerMs);
  return value;
}

export interface AllCommandsInput {
  signalTarget: string;
  continued: boolean;
}

/**
 * Emits every command the SDK has (activity, local activity, timer start/cancel, signal external,
 * child start/complete/fail/cancel, upsert search attributes, modify properties, patch marker,
 * continue-as-new) so the test can check each writes its event, in command order, and replays.
 */
export async function allCommands(input: AllCommandsInput): Promise<string> {
  if (input.continued) return `continued from ${workflowInfo().continuedFromExecutionRunId ?? 'nothing'}`;
  const { workflowId } = workflowInfo();

  // One workflow task, four commands: their events must follow in exactly this order.
  const timerScope = new CancellationScope();
  const timer = timerScope.run(() => sleep(DAY_MS));
  const activity = echo('scheduled');
  upsertSearchAttributes([
    { key: KEYWORD_KEY, value: 'upserted' },
    { key: INT_KEY, value: 7 },
  ]);
  upsertMemo({ note: 'modified' });

  await activity;
  timerScope.cancel();
  await timer.catch((err: unknown) => {
    if (!isCancellation(err)) throw err;
  });

  if (patched('engine-conformance-patch')) {
    await local.echo('local');
  }

  await getExternalWorkflowHandle(input.signalTarget).signal(pushSignal, 'from-external');

  const childResult = await executeChild(returnValue<string>, {
    args: ['child-result'],
    workflowId: `${workflowId}-child-ok`,
  });

  let childFailure = 'none';
  try {
    await executeChild(failWithType, { args: ['ChildBroke'], workflowId: `${workflowId}-child-fail` });
  } catch (err) {
    if (err instanceof ChildWorkflowFailure && err.cause instanceof ApplicationFailure) {
      childFailure = err.cause.type ?? 'untyped';
    } else {
      throw err;
    }
  }

  const childScope = new CancellationScope();
  const cancelledChild = await childScope.run(() =>
    startChild(sleeper, { args: [DAY_MS], workflowId: `${workflowId}-child-cancel` }),
  );
  childScope.cancel();
  let childCancel = 'not cancelled';
  try {
    await cancelledChild.result();
  } catch (err) {
    if (isCancellation(err)) childCancel = 'cancelled';
    else throw err;
  }

  if (childResult !== 'child-result' || childFailure !== 'ChildBroke' || childCancel !== 'cancelled') {
    throw ApplicationFailure.nonRetryable(`unexpected child outcomes ${childResult}/${childFailure}/${childCancel}`);
  }
  return continueAsNew<typeof allCommands>({ ...input, continued: true });
}

export type ChildOutcome = 'complete' | 'fail' | 'cancel';

/** Runs one child and reports how it ended, as the parent saw it. */
export async function parentOfChild(outcome: ChildOutcome): Promise<string> {
  const { workflowId } = workflowInfo();
  const childId = `${workflowId}-child`;
  if (outcome === 'complete') {
    return executeChild(childReportsParent, { workflowId: childId });
  }
  if (outcome === 'fail') {
    try {
      await executeChild(failWithType, { args: ['ChildBroke'], workflowId: childId });
      return 'completed';
    } catch (err) {
      if (err instanceof ChildWorkflowFailure && err.cause instanceof ApplicationFailure) {
        return `failed: ${err.cause.type ?? 'untyped'}`;
      }
      throw err;
    }
  }
  const scope = new CancellationScope();
  const child = await scope.run(() => startChild(sleeper, { args: [DAY_MS], workflowId: childId }));
  scope.cancel();
  try {
    await child.result();
    return 'completed';
  } catch (err) {
    if (err instanceof ChildWorkflowFailure && isCancellation(err)) return 'cancelled';
    throw err;
  }
}

export async function childReportsParent(): Promise<string> {
  const { parent } = workflowInfo();
  return `child of ${parent?.workflowId ?? 'nobody'}`;
}

export interface ContinueAsNewResult {
  iteration: number;
  continuedFromExecutionRunId: string | undefined;
  firstExecutionRunId: string;
}

/** Continues as new until `iteration` reaches `last`. */
export async function continueAsNewCounter(iteration: number, last: number): Promise<ContinueAsNewResult> {
  if (iteration < last) {
    return continueAsNew<typeof continueAsNewCounter>(iteration + 1, last);
  }
  const info = workflowInfo();
  return {
    iteration,
    continuedFromExecutionRunId: info.continuedFromExecutionRunId,
    firstExecutionRunId: info.firstExecutionRunId,
  };
}

/** Update handlers (validated, blocking, failing) over a counter; closes on `finish`. */
export async function updatable(): Promise<number> {
  let count = 0;
  let released = false;
  let finished = false;
  setHandler(
    incrementUpdate,
    (by) => {
      count += by;
      return count;
    },
    {
      validator: (by) => {
        if (by < 0) throw new Error(`increment must not be negative, got ${by}`);
      },
    },
  );
  setHandler(waitForReleaseUpdate, async () => {
    await condition(() => released);
    return 'released';
  });
  setHandler(throwingUpdate, (message) => {
    throw ApplicationFailure.create({ message, type: 'UpdateBroke' });
  });
  setHandler(releaseSignal, () => {
    released = true;
  });
  setHandler(finishSignal, () => {
    finished = true;
  });
  setHandler(countQuery, () => count);
  await condition(() => finished);
  return count;
}

/** Catches its cancellation, cleans up through an activity and completes normally. */
export async function cleanupOnCancel(): Promise<string> {
  try {
    await sleep(DAY_MS);
    return 'slept';
  } catch (err) {
    if (!isCancellation(err)) throw err;
    return CancellationScope.nonCancellable(() => echo('cleaned up'));
  }
}

/** Reports what the workflow sees of its own start options. */
export async function reportStartInfo(): Promise<{
  memo: Record<string, unknown> | undefined;
  keyword: string | undefined;
  attempt: number;
  runTimeoutMs: number | undefined;
  executionTimeoutMs: number | undefined;
}> {
  const info = workflowInfo();
  return {
    memo: info.memo,
    keyword: info.typedSearchAttributes.get(KEYWORD_KEY),
    attempt: info.attempt,
    runTimeoutMs: info.runTimeoutMs,
    executionTimeoutMs: info.executionTimeoutMs,
  };
}

/** Sleeps 1 ms `count` times: a long history (5 events per timer) for paging. */
export async function manyTimers(count: number): Promise<number> {
  for (let i = 0; i < count; i++) {
    await sleep(1);
  }
  return count;
}

/** In test/engine/workflows.ts it succeeds; the failing bundle's version fails its workflow task. */
export async function flakyTask(): Promise<string> {
  return 'recovered';
}

/** The unit of the durability test: a timer, an activity on `activityQueue`, then a signal. */
export async function durableSteps(timerMs: number, activityQueue: string): Promise<string[]> {
  const steps: string[] = [];
  let released = false;
  setHandler(releaseSignal, () => {
    released = true;
  });
  setHandler(itemsQuery, () => steps);
  await sleep(timerMs);
  steps.push('timer fired');
  const { failTimes } = proxyActivities<EngineActivities>({
    taskQueue: activityQueue,
    startToCloseTimeout: '3s',
    retry: { initialInterval: '200ms', maximumAttempts: 10 },
  });
  steps.push(`activity ran at attempt ${await failTimes(0)}`);
  await condition(() => released);
  steps.push('signal arrived');
  return steps;
}

/** An activity whose first attempt hangs on a worker that is about to be killed with the server. */
export async function activityAcrossRestart(activityQueue: string): Promise<number> {
  const { hangOnFirstAttempt } = proxyActivities<{ hangOnFirstAttempt(): Promise<number> }>({
    taskQueue: activityQueue,
    startToCloseTimeout: '3s',
    retry: { initialInterval: '200ms', maximumAttempts: 5 },
  });
  return hangOnFirstAttempt();
}

/** Starts a child that waits for signals and completes at once, leaving the child to its parent close policy. */
export async function parentLeavesChild(policy: 'TERMINATE' | 'ABANDON' | 'REQUEST_CANCEL'): Promise<string> {
  const child = await startChild(signalCollector, {
    workflowId: `${workflowInfo().workflowId}-child`,
    parentClosePolicy: policy,
  });
  return child.workflowId;
}

/** Fails its first attempt with a retryable failure; the workflow retry policy starts attempt 2. */
export async function failFirstAttempt(): Promise<string> {
  const { attempt } = workflowInfo();
  if (attempt === 1) throw ApplicationFailure.retryable('the first attempt fails', 'FirstAttempt');
  return `attempt ${attempt}`;
}

/** Cancels an activity that completes asynchronously; its outside completer learns it through a heartbeat. */
export async function cancelAsyncActivity(key: string, cancelAfterMs: number): Promise<string> {
  const { completeLater } = proxyActivities<EngineActivities>({
    startToCloseTimeout: '1 minute',
    heartbeatTimeout: '30s',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { maximumAttempts: 1 },
  });
  const scope = new CancellationScope();
  const running = scope.run(() => completeLater(key));
  await sleep(cancelAfterMs);
  scope.cancel();
  try {
    await running;
    return 'completed';
  } catch (err) {
    return isCancellation(err) ? 'cancelled' : `failed: ${String(err)}`;
  }
}

/** Signals and cancels a workflow that does not exist; reports how each command ended. */
export async function externalToNobody(targetId: string): Promise<string[]> {
  const outcomes: string[] = [];
  const target = getExternalWorkflowHandle(targetId);
  try {
    await target.signal(pushSignal, 'nobody home');
    outcomes.push('signal delivered');
  } catch {
    outcomes.push('signal failed');
  }
  try {
    await target.cancel();
    outcomes.push('cancel delivered');
  } catch {
    outcomes.push('cancel failed');
  }
  return outcomes;
}

/** Starts a child, then a second child with the same id while the first runs. */
export async function duplicateChild(): Promise<string> {
  const childId = `${workflowInfo().workflowId}-child`;
  const first = await startChild(signalCollector, { workflowId: childId });
  let outcome = 'second child started';
  try {
    await startChild(signalCollector, { workflowId: childId });
  } catch (err) {
    outcome = err instanceof WorkflowExecutionAlreadyStartedError ? 'already started' : `failed: ${String(err)}`;
  }
  await first.signal(finishSignal);
  await first.result();
  return outcome;
}
export * from './workflows-updates.js';
export * from './workflows-info.js';
export * from './workflows-errors.js';
export * from './workflows-local-activities.js';
