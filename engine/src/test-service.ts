// temporal.api.testservice.v1.TestService: the time-skipping controls used by @temporalio/testing. In dev-server
// mode with `--clock-control` it is served too, as an advanceable clock: GetCurrentTime, and Sleep / SleepUntil
// move the clock forward (firing what comes due in order, each once the work before it settled) and answer once
// the clock got there and no task is outstanding; there is no time skipping to lock or unlock.
import type { Clock } from './clock.js';
import { Code, RpcError } from './errors.js';
import { log } from './log.js';
import { durationMs, msTs, tsMs, type Plain, type temporal } from './proto.js';

type SleepRequest = Plain<temporal.api.testservice.v1.ISleepRequest>;
type SleepUntilRequest = Plain<temporal.api.testservice.v1.ISleepUntilRequest>;

const NO_TIME_SKIPPING = 'time skipping is off in dev-server mode: advance the clock with Sleep or SleepUntil';

export class TestService {
  /** `commit` (dev-server mode) makes the advanced offset durable before an advance is answered. */
  constructor(
    private readonly clock: Clock,
    private readonly commit?: () => Promise<void>,
  ) {}

  private async until(at: number): Promise<void> {
    if (!this.clock.timeSkipping) {
      await this.clock.advanceTo(at);
      await this.commit?.();
      return;
    }
    await new Promise<void>((resolve) => this.clock.schedule(at, resolve));
  }

  private requireTimeSkipping(): void {
    if (!this.clock.timeSkipping) throw new RpcError(Code.FAILED_PRECONDITION, NO_TIME_SKIPPING);
  }

  async LockTimeSkipping(): Promise<object> {
    this.requireTimeSkipping();
    this.clock.lock();
    return {};
  }

  async UnlockTimeSkipping(): Promise<object> {
    this.requireTimeSkipping();
    try {
      this.clock.unlock();
    } catch (err) {
      throw new RpcError(Code.FAILED_PRECONDITION, (err as Error).message);
    }
    return {};
  }

  async Sleep(r: SleepRequest): Promise<object> {
    if (log.debugEnabled) log.debug('Sleep', this.clock.describe());
    await this.until(this.clock.now() + durationMs(r.duration));
    return {};
  }

  async SleepUntil(r: SleepUntilRequest): Promise<object> {
    await this.until(tsMs(r.timestamp));
    return {};
  }

  async UnlockTimeSkippingWithSleep(r: SleepRequest): Promise<object> {
    this.requireTimeSkipping();
    const at = this.clock.now() + durationMs(r.duration);
    try {
      // Locks again in the deadline's own callback, before the clock can jump any further.
      await this.clock.sleepUnlocked(at);
    } catch (err) {
      throw new RpcError(Code.FAILED_PRECONDITION, (err as Error).message);
    }
    return {};
  }

  async GetCurrentTime(): Promise<object> {
    return { time: msTs(this.clock.now()) };
  }
}
