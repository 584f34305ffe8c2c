// The sandbox clock of `npm start` in sandbox mode: the embedded engine's dev-server clock (`--clock-control`),
// which only moves forward, when asked. The engine is the authority (timers, workflow time); the durable processes'
// stamps (the business clock: activities, the sandbox PGs, the API's reserve and schedule checks) read the same
// time through `now()`: the wall clock plus the engine's offset, learned at connect, after every advance, and from
// each activity the engine hands out while an advance runs (`followEngineTime`: the engine does not jump while a
// task is outstanding, so the attempt's scheduled time is a lower bound of its time until the activity ends). Real-world time never reads it: it stays on the wall clock
// (src/platform/time.ts, Clocks).
import { Context } from '@temporalio/activity';
import { Connection } from '@temporalio/client';
import { type InternalConnectionOptions, InternalConnectionOptionsSymbol } from '@temporalio/client/lib/connection.js';
import { msToTs, tsToMs } from '@temporalio/common/lib/time.js';
import { type TemporalTransport, temporalTransportOptions } from './transport.js';

/** How long an advance waits for the work it caused to settle before it answers anyway. */
export const ADVANCE_WAIT_MS = 60_000;

export interface SandboxClock {
  /** The sandbox's time: the wall clock plus the engine's offset as last learned (synchronous: the business clock). */
  now(): Date;
  /** Asks the engine for its time (and learns its offset). */
  read(): Promise<Date>;
  /**
   * Moves the engine's clock forward by `ms`, or to `to`: timers due on the way fire in order. Resolves with the
   * engine's time once no workflow or activity task is outstanding (`settled`), or after `waitMs` with the
   * time reached so far; the advance itself carries on.
   */
  advance(target: { ms: number } | { to: Date }, waitMs?: number): Promise<{ now: Date; settled: boolean }>;
  /** The engine's time was at least `engineMs` just now (an activity attempt's scheduled time); only moves forward. */
  observe(engineMs: number): void;
}

export interface ConnectedSandboxClock extends SandboxClock {
  close(): Promise<void>;
}

/** An offset of 0 (the wall clock) until `connect` learns the engine's. */
export function createSandboxClock(): SandboxClock & {
  /** `transport`: the engine's (EmbeddedEngine.transport), so the clock's calls present its token */
  connect(address: string, transport?: TemporalTransport): Promise<ConnectedSandboxClock>;
} {
  let offsetMs = 0;
  let connection: Connection | undefined;

  const testService = () => {
    if (!connection?.testService) throw new Error('the sandbox clock is not connected to the embedded engine');
    return connection.testService;
  };
  const read = async () => {
    const before = Date.now();
    const { time } = await testService().getCurrentTime({});
    const engineMs = tsToMs(time);
    // The engine's offset, measured from the middle of the round trip.
    offsetMs = engineMs - Math.round((before + Date.now()) / 2);
    return new Date(engineMs);
  };

  const clock: SandboxClock = {
    now: () => new Date(Date.now() + offsetMs),
    read,
    observe(engineMs) {
      offsetMs = Math.max(offsetMs, engineMs - Date.now());
    },
    async advance(target, waitMs = ADVANCE_WAIT_MS) {
      const service = testService();
      const call =
        'ms' in target
          ? () => service.sleep({ duration: msToTs(target.ms) })
          : () => service.sleepUntil({ timestamp: msToTs(target.to.getTime()) });
      let settled = true;
      try {
        await connection!.withDeadline(Date.now() + waitMs, call);
      } catch (err) {
        // DEADLINE_EXCEEDED: the work has not settled yet; anything else is the engine's failure.
        if ((err as { code?: number }).code !== 4) throw err;
        settled = false;
      }
      return { now: await read(), settled };
    },
  };

  return {
    ...clock,
    async connect(address, transport) {
      const options: InternalConnectionOptions = {
        address,
        connectTimeout: '10 seconds',
        ...temporalTransportOptions(transport),
        // The TestService stub, as @temporalio/testing asks for it; the engine serves it with --clock-control.
        [InternalConnectionOptionsSymbol]: { supportsTestService: true },
      };
      connection = await Connection.connect(options);
      await read();
      return { ...clock, close: () => connection!.close() };
    },
  };
}

/** What a local activity's input carries so the sandbox clock can follow the engine (see followEngineTime). */
export interface WorkflowTimeStamp {
  /** the workflow's Date.now() when it asked for the attempt: the engine's time then */
  readonly workflowTimeMs?: number;
}

/**
 * The activities, each first telling the clock the engine time its attempt was scheduled at: an activity fired
 * by an advance stamps its rows in the advanced time even before the advance answers. A local activity's info
 * carries the worker's wall clock instead, so it passes the workflow's time in its input (WorkflowTimeStamp).
 */
export function followEngineTime<T extends object>(activities: T, clock: SandboxClock): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] =
      typeof fn === 'function'
        ? (...args: unknown[]) => {
            const info = Context.current().info;
            if (!info.isLocal) clock.observe(info.currentAttemptScheduledTimestampMs);
            else {
              const stamped = (args[0] as WorkflowTimeStamp | undefined)?.workflowTimeMs;
              if (typeof stamped === 'number') clock.observe(stamped);
            }
            return (fn as (...a: unknown[]) => unknown)(...args);
          }
        : fn;
  }
  return wrapped as T;
}
