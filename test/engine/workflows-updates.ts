// Workflows of update-fidelity.test.ts and update-with-start.test.ts: update handlers that outlive their run, a
// run started with a delay, and a recorder driven only by updates.
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  defineUpdate,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';

/** How `unfinishedUpdates` ends its run once told to. */
export type RunEnding = 'return' | 'fail' | 'continue-as-new';

export const neverEndingUpdate = defineUpdate<string>('neverEnding');
export const shieldedUpdate = defineUpdate<string>('shielded');
export const endRunSignal = defineSignal<[RunEnding]>('endRun');

/**
 * Update handlers that never finish (`shielded` not even when the workflow is cancelled); the run ends as the
 * `endRun` signal says, or is cancelled, terminated or timed out by the test. A continued run waits for its own end.
 */
export async function unfinishedUpdates(): Promise<string> {
  let ending: RunEnding | undefined;
  setHandler(neverEndingUpdate, async () => {
    await condition(() => false);
    return 'unreachable';
  });
  setHandler(shieldedUpdate, () =>
    CancellationScope.nonCancellable(async () => {
      await condition(() => false);
      return 'unreachable';
    }),
  );
  setHandler(endRunSignal, (how) => {
    ending = how;
  });
  await condition(() => ending !== undefined);
  if (ending === 'fail') throw ApplicationFailure.nonRetryable('the run failed on purpose', 'RunFailed');
  if (ending === 'continue-as-new') await continueAsNew<typeof unfinishedUpdates>();
  return `returned by run ${workflowInfo().runId}`;
}

export const recordUpdate = defineUpdate<string[], [string]>('record');
export const doneUpdate = defineUpdate<string[]>('done');
export const recordedQuery = defineQuery<string[]>('recorded');

/**
 * Records `record` updates (the validator refuses an empty item) until `done`; returns what it recorded and the
 * workflow argument first. Each update answers the items so far.
 */
export async function recordsUntilDone(label = 'start'): Promise<string[]> {
  const items: string[] = [label];
  let done = false;
  setHandler(
    recordUpdate,
    (item) => {
      items.push(item);
      return [...items];
    },
    {
      validator: (item) => {
        if (!item) throw new Error('an empty item is refused');
      },
    },
  );
  setHandler(doneUpdate, () => {
    done = true;
    return [...items];
  });
  setHandler(recordedQuery, () => items);
  await condition(() => done);
  return items;
}

export const mutateStateUpdate = defineUpdate('mutateState');

/**
 * Sets an update handler and returns at once: the result shows the update only if the update came in the same
 * (first) workflow task as the start.
 */
export async function setUpdateHandlerAndReturn(): Promise<string> {
  let state = 'initial';
  setHandler(mutateStateUpdate, () => {
    state = 'mutated by update';
  });
  return state;
}
