import { setTimeout as delay } from 'node:timers/promises';
import { ApplicationFailure, CompleteAsyncError, Context } from '@temporalio/activity';

/** What the activities saw, for the test that owns the worker to assert on. */
export class ActivityRecorder {
  /** currentAttemptScheduledTimestampMs of each attempt, keyed by `${workflowId}/${activityId}`. */
  readonly attemptScheduledAt = new Map<string, number[]>();
  readonly taskTokens = new Map<string, Uint8Array>();
  readonly cancellationsSeen = new Set<string>();
  readonly calls: string[] = [];

  recordAttempt(key: string, scheduledAtMs: number): number[] {
    const attempts = this.attemptScheduledAt.get(key) ?? [];
    attempts.push(scheduledAtMs);
    this.attemptScheduledAt.set(key, attempts);
    return attempts;
  }
}

function currentKey(): string {
  const { workflowExecution, activityId } = Context.current().info;
  return `${workflowExecution?.workflowId ?? 'standalone'}/${activityId}`;
}

export interface ActivityInfoSnapshot {
  attempt: number;
  startToCloseTimeoutMs: number;
  scheduleToCloseTimeoutMs: number | undefined;
  heartbeatTimeoutMs: number | undefined;
  activityType: string;
  taskQueue: string;
}

export function createActivities(recorder: ActivityRecorder = new ActivityRecorder()) {
  return {
    async echo(value: string): Promise<string> {
      recorder.calls.push(`echo:${value}`);
      return value;
    },

    /** Fails `failures` times with a retryable error of `errorType`, then returns the attempt number. */
    async failTimes(failures: number, errorType = 'Flaky'): Promise<number> {
      const { attempt, currentAttemptScheduledTimestampMs } = Context.current().info;
      recorder.recordAttempt(currentKey(), currentAttemptScheduledTimestampMs);
      if (attempt <= failures) {
        throw ApplicationFailure.retryable(`attempt ${attempt} fails`, errorType, { attempt });
      }
      return attempt;
    },

    /** Always fails with `errorType`; `nonRetryable` marks the failure itself as non-retryable. */
    async failWith(errorType: string, nonRetryable: boolean): Promise<never> {
      const { attempt, currentAttemptScheduledTimestampMs } = Context.current().info;
      recorder.recordAttempt(currentKey(), currentAttemptScheduledTimestampMs);
      throw ApplicationFailure.create({ message: `attempt ${attempt} failed`, type: errorType, nonRetryable });
    },

    /** Runs until cancelled (by a timeout or a cancel request delivered through heartbeats). */
    async stall(heartbeatEveryMs: number): Promise<string> {
      const ctx = Context.current();
      for (;;) {
        if (heartbeatEveryMs > 0) ctx.heartbeat('stalling');
        try {
          await ctx.sleep(heartbeatEveryMs > 0 ? heartbeatEveryMs : 60_000);
        } catch (err) {
          recorder.cancellationsSeen.add(currentKey());
          throw err;
        }
      }
    },

    /** Heartbeats `details` once, then stops heartbeating (to trip the heartbeat timeout). */
    async heartbeatOnceThenStall(details: string): Promise<string> {
      const ctx = Context.current();
      ctx.heartbeat(details);
      await ctx.sleep(60_000);
      return 'unreachable';
    },

    /** Attempt 1 checkpoints through a heartbeat and fails; later attempts return the checkpoint they resume from. */
    async resumeFromHeartbeat(checkpoint: string): Promise<string> {
      const ctx = Context.current();
      if (ctx.info.attempt === 1) {
        ctx.heartbeat(checkpoint);
        // Give the worker a moment to flush the (throttled) heartbeat before failing.
        await ctx.sleep(300);
        throw ApplicationFailure.retryable('fail after checkpoint', 'Flaky');
      }
      return `attempt ${ctx.info.attempt} resumed from ${String(ctx.info.heartbeatDetails)}`;
    },

    /** Hands its task token to the test and leaves completion to the async completion client. */
    async completeLater(key: string): Promise<string> {
      recorder.taskTokens.set(key, Context.current().info.taskToken);
      throw new CompleteAsyncError();
    },

    async describeSelf(): Promise<ActivityInfoSnapshot> {
      const { info } = Context.current();
      return {
        attempt: info.attempt,
        startToCloseTimeoutMs: info.startToCloseTimeoutMs,
        scheduleToCloseTimeoutMs: info.scheduleToCloseTimeoutMs,
        heartbeatTimeoutMs: info.heartbeatTimeoutMs,
        activityType: info.activityType,
        taskQueue: info.taskQueue,
      };
    },

    /** Takes `ms` of real time: while it runs the virtual clock must not skip. */
    async busyFor(ms: number): Promise<string> {
      await delay(ms);
      return 'activity';
    },
  };
}

export type EngineActivities = ReturnType<typeof createActivities>;
