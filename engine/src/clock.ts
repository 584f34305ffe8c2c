// One clock for the whole service. In time-skipping mode it is virtual: it runs at wall speed but jumps to the
// next deadline whenever nothing can make progress on its own (lock counter 0, no task outstanding) — the
// semantics of the Java test server's SelfAdvancingTimer. In dev-server mode it is real time plus an offset
// that only an advance (`advanceTo`, the sandbox clock) moves, and only forward.

export interface TimerHandle {
  cancel(): void;
}

interface Entry {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

const MAX_TIMEOUT = 2 ** 31 - 1;

export class Clock {
  private offset = 0;
  private heap: Entry[] = [];
  private seq = 0;
  private wake: NodeJS.Timeout | null = null;
  private wakeAt = Infinity;
  private checkQueued = false;
  private lockCount: number;
  private readonly outstanding = new Set<string>();
  /** UnlockTimeSkippingWithSleep calls in progress (each took one lock away until its deadline). */
  private sleepers = 0;
  private stopped = false;
  /** Dev-server mode: the time an advance in progress takes the clock to, and who waits for it to settle. */
  private advanceTarget = -Infinity;
  private advanceWaiters: Array<() => void> = [];
  /** Called whenever the offset moves (the engine journals it, so time never goes back across a restart). */
  onOffsetChange: (() => void) | undefined;

  constructor(readonly timeSkipping: boolean) {
    // Time skipping starts locked, as in the Java test server: TimeSkippingWorkflowClient.result() unlocks it.
    this.lockCount = timeSkipping ? 1 : 0;
  }

  now(): number {
    return Date.now() + this.offset;
  }

  /** How far the clock is ahead of the wall clock. */
  get offsetMs(): number {
    return this.offset;
  }

  /** A journaled offset, applied on restart; never moves the clock back. */
  restoreOffset(ms: number): void {
    if (ms > this.offset) this.offset = ms;
  }

  /**
   * Dev-server mode: moves the clock forward to `at`, one deadline at a time in order, each jump only once no
   * workflow or activity task is outstanding (the work the previous deadline caused has settled), then to `at`
   * itself. Resolves once the clock has reached `at` and nothing is outstanding. A time already passed changes
   * nothing but still waits for the work in flight to settle.
   */
  advanceTo(at: number): Promise<void> {
    if (this.timeSkipping) throw new Error('advanceTo is for the dev-server clock; time skipping moves on its own');
    if (at > this.advanceTarget) this.advanceTarget = at;
    return new Promise<void>((resolve) => {
      this.advanceWaiters.push(resolve);
      this.kick();
    });
  }

  schedule(at: number, fn: () => void): TimerHandle {
    const entry: Entry = { at, seq: this.seq++, fn, cancelled: false };
    this.push(entry);
    this.kick();
    return {
      cancel: () => {
        entry.cancelled = true;
      },
    };
  }

  lock(): void {
    this.lockCount++;
  }

  /**
   * As in the Java server, outstanding tasks count as locks of the same counter: an unlock is refused only
   * when the whole counter is zero, so concurrent result() calls (each unlocking, then locking again) pass.
   */
  unlock(): void {
    if (this.lockCount + this.outstanding.size <= 0) {
      throw new Error('unbalanced UnlockTimeSkipping: time skipping is not locked');
    }
    this.lockCount--;
    this.kick();
  }

  get locks(): number {
    return this.lockCount;
  }

  /**
   * UnlockTimeSkippingWithSleep (the SDK's `env.sleep()`): unlocks now and locks again, synchronously, when the
   * clock reaches `at`. While such a sleep is in progress the clock counts as the Java test server's does — one
   * counter of locks and outstanding tasks, skipping at zero — so an activity that sleeps this way (and holds
   * time as a running task) still reaches its deadline, firing the timers due before it on the way.
   */
  sleepUnlocked(at: number): Promise<void> {
    this.unlock();
    this.sleepers++;
    return new Promise((resolve) =>
      this.schedule(at, () => {
        this.sleepers--;
        this.lockCount++;
        resolve();
      }),
    );
  }

  /** Outstanding work (a workflow or activity task in flight) holds time still in time-skipping mode. */
  setOutstanding(key: string, busy: boolean): void {
    if (busy) {
      this.outstanding.add(key);
    } else if (this.outstanding.delete(key)) {
      this.kick();
    }
  }

  describe(): { locks: number; outstanding: string[]; sleepers: number; timers: number; virtualOffsetMs: number } {
    return {
      locks: this.lockCount,
      outstanding: [...this.outstanding],
      sleepers: this.sleepers,
      timers: this.heap.length,
      virtualOffsetMs: this.offset,
    };
  }

  stop(): void {
    this.stopped = true;
    if (this.wake) clearTimeout(this.wake);
    this.wake = null;
  }

  private canSkip(nextAt: number): boolean {
    if (!this.timeSkipping) return this.advanceWaiters.length > 0 && this.outstanding.size === 0 && nextAt <= this.advanceTarget;
    // Unlike an unlock's check, a jump needs every task settled: time must not run past a task in flight...
    if (this.lockCount <= 0 && this.outstanding.size === 0) return true;
    // ...unless a caller sleeps with time unlocked: then, as in the Java test server, tasks are just locks.
    return this.sleepers > 0 && this.lockCount + this.outstanding.size <= 0;
  }

  private kick(): void {
    if (this.checkQueued || this.stopped) return;
    this.checkQueued = true;
    setImmediate(() => {
      this.checkQueued = false;
      this.run();
    });
  }

  private run(): void {
    if (this.stopped) return;
    let fired = false;
    for (;;) {
      this.dropCancelled();
      const next = this.heap[0];
      if (!next) break;
      const now = this.now();
      if (next.at > now) {
        if (!this.canSkip(next.at)) break;
        // A fired timer usually creates a task: let it register before deciding to jump again.
        if (fired) {
          this.kick();
          return;
        }
        this.moveOffset(next.at - now);
      }
      this.pop();
      fired = true;
      try {
        next.fn();
      } catch (err) {
        process.stderr.write(`temporal-devserver: timer callback failed: ${String(err)}\n`);
      }
    }
    if (this.advanceWaiters.length > 0) {
      if (fired) {
        this.kick();
        return;
      }
      if (this.outstanding.size === 0) this.finishAdvance();
    }
    this.armWake();
  }

  /** Nothing due before the target and nothing outstanding: the rest of the way, then the waiters are told. */
  private finishAdvance(): void {
    const rest = this.advanceTarget - this.now();
    if (rest > 0) this.moveOffset(rest);
    this.advanceTarget = -Infinity;
    const waiters = this.advanceWaiters;
    this.advanceWaiters = [];
    for (const w of waiters) w();
  }

  private moveOffset(ms: number): void {
    this.offset += ms;
    this.onOffsetChange?.();
    // the wake was armed with a wall-clock delay from before the jump: a deadline just past an advance's target
    // would otherwise wait that whole delay (up to 24 days) instead of its few seconds
    if (this.wake) clearTimeout(this.wake);
    this.wake = null;
    this.wakeAt = Infinity;
  }

  private armWake(): void {
    this.dropCancelled();
    const next = this.heap[0];
    const at = next ? next.at : Infinity;
    if (at === this.wakeAt && this.wake) return;
    if (this.wake) clearTimeout(this.wake);
    this.wake = null;
    this.wakeAt = at;
    if (at === Infinity) return;
    const delay = Math.min(Math.max(0, at - this.now()), MAX_TIMEOUT);
    this.wake = setTimeout(() => {
      this.wake = null;
      this.wakeAt = Infinity;
      this.run();
    }, delay);
  }

  private dropCancelled(): void {
    while (this.heap[0]?.cancelled) this.pop();
  }

  private less(a: Entry, b: Entry): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private push(e: Entry): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  private pop(): Entry | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}
