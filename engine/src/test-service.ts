// temporal.api.testservice.v1.TestService: the time-skipping controls used by @temporalio/testing.
import type { Clock } from './clock.js';
import { Code, RpcError } from './errors.js';
import { log } from './log.js';
import { durationMs, msTs, tsMs, type Plain, type temporal } from './proto.js';

type SleepRequest = Plain<temporal.api.testservice.v1.ISleepRequest>;
type SleepUntilRequest = Plain<temporal.api.testservice.v1.ISleepUntilRequest>;

export class TestService {
  constructor(private readonly clock: Clock) {}

  private until(at: number): Promise<void> {
    return new Promise((resolve) => this.clock.schedule(at, resolve));
  }

  async LockTimeSkipping(): Promise<object> {
    this.clock.lock();
    return {};
  }

  async UnlockTimeSkipping(): Promise<object> {
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
