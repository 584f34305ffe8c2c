// Task queues with long-poll matching. A queue holds task references; the engine re-validates a reference
// when a poller takes it (the task may have been completed, timed out or moved meanwhile).

export interface Poll<T> {
  resolve(task: T | null): void;
  done: boolean;
}

interface Queue<T> {
  tasks: T[];
  head: number;
  pollers: Poll<T>[];
}

export class TaskQueues<T> {
  private readonly queues = new Map<string, Queue<T>>();

  private queue(key: string): Queue<T> {
    let q = this.queues.get(key);
    if (!q) {
      q = { tasks: [], head: 0, pollers: [] };
      this.queues.set(key, q);
    }
    return q;
  }

  offer(key: string, task: T): void {
    const q = this.queue(key);
    while (q.pollers.length > 0) {
      const poller = q.pollers.shift()!;
      if (poller.done) continue;
      poller.done = true;
      poller.resolve(task);
      return;
    }
    q.tasks.push(task);
  }

  /** Resolves with a task, or null when the wait ends (timeout or cancelled caller). */
  poll(key: string, timeoutMs: number, onCancel: (cancel: () => void) => void): Promise<T | null> {
    const q = this.queue(key);
    if (q.head < q.tasks.length) {
      const task = q.tasks[q.head]!;
      q.head++;
      if (q.head > 1024 && q.head * 2 > q.tasks.length) {
        q.tasks = q.tasks.slice(q.head);
        q.head = 0;
      }
      return Promise.resolve(task);
    }
    return new Promise<T | null>((resolve) => {
      const poller: Poll<T> = { resolve, done: false };
      const finish = () => {
        if (poller.done) return;
        poller.done = true;
        clearTimeout(timer);
        const i = q.pollers.indexOf(poller);
        if (i >= 0) q.pollers.splice(i, 1);
        resolve(null);
      };
      const timer = setTimeout(finish, timeoutMs);
      poller.resolve = (task) => {
        clearTimeout(timer);
        resolve(task);
      };
      q.pollers.push(poller);
      onCancel(finish);
    });
  }

  /** Removes and returns every queued task of a queue (used when a sticky queue's worker goes away). */
  drain(key: string): T[] {
    const q = this.queues.get(key);
    if (!q) return [];
    const tasks = q.tasks.slice(q.head);
    q.tasks = [];
    q.head = 0;
    return tasks;
  }

  /** Answers every waiting poller of the queues matching the predicate with an empty poll. */
  release(match: (key: string) => boolean): void {
    for (const [key, q] of this.queues) {
      if (!match(key)) continue;
      for (const p of q.pollers.splice(0)) {
        if (p.done) continue;
        p.done = true;
        p.resolve(null);
      }
    }
  }

  hasPollers(key: string): boolean {
    const q = this.queues.get(key);
    return !!q && q.pollers.some((p) => !p.done);
  }
}
