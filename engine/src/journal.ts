// Durable storage for --db-filename: an append-only JSON-lines journal. Each line records one execution's
// state after a change plus the history events appended since the previous line (`base` is the history length
// those events start at, so a rolled-back speculative workflow task is a shorter `base`). Lines are written and
// fdatasync'd before the RPC that caused them is answered (group commit). On open the journal is replayed and
// compacted into a fresh snapshot so it does not grow without bound.
import fs from 'node:fs';
import path from 'node:path';

export interface JournalRecord {
  key: string;
  base: number;
  events: unknown[];
  state: unknown;
}

function replacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const original = this[key];
  if (original instanceof Uint8Array) return { $b64: Buffer.from(original).toString('base64') };
  return value;
}

function reviver(_key: string, value: unknown): unknown {
  if (value && typeof value === 'object' && '$b64' in value) {
    return Buffer.from(String((value as { $b64: string }).$b64), 'base64');
  }
  return value;
}

export function serialize(value: unknown): string {
  return JSON.stringify(value, replacer);
}

export function deserialize<T>(line: string): T {
  return JSON.parse(line, reviver) as T;
}

export interface RestoredExecution {
  state: unknown;
  events: unknown[];
}

export class Journal {
  private fd: number;
  private pending: string[] = [];
  private waiters: Array<() => void> = [];
  private scheduled = false;

  private constructor(
    private readonly file: string,
    fd: number,
  ) {
    this.fd = fd;
  }

  /** Replays the journal at `file` (if any), compacts it, and opens it for appending. */
  static open(file: string): { journal: Journal; restored: Map<string, RestoredExecution> } {
    const restored = new Map<string, RestoredExecution>();
    if (fs.existsSync(file)) {
      const text = fs.readFileSync(file, 'utf8');
      for (const line of text.split('\n')) {
        if (!line) continue;
        let rec: JournalRecord;
        try {
          rec = deserialize<JournalRecord>(line);
        } catch {
          // A torn final line from a crash mid-write: everything before it is intact.
          break;
        }
        const cur = restored.get(rec.key) ?? { state: null, events: [] };
        cur.events.length = Math.min(cur.events.length, rec.base);
        for (const e of rec.events) cur.events.push(e);
        cur.state = rec.state;
        restored.set(rec.key, cur);
      }
    }
    fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    const tmp = `${file}.compact`;
    const out = fs.openSync(tmp, 'w');
    for (const [key, r] of restored) {
      fs.writeSync(out, serialize({ key, base: 0, events: r.events, state: r.state }) + '\n');
    }
    fs.fdatasyncSync(out);
    fs.closeSync(out);
    fs.renameSync(tmp, file);
    const fd = fs.openSync(file, 'a');
    return { journal: new Journal(file, fd), restored };
  }

  append(record: JournalRecord): void {
    this.pending.push(serialize(record));
  }

  /** Resolves once everything appended so far is on disk. */
  flush(): Promise<void> {
    if (this.pending.length === 0 && !this.scheduled) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.waiters.push(resolve);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.writeNow());
      }
    });
  }

  private writeNow(): void {
    this.scheduled = false;
    const lines = this.pending;
    const waiters = this.waiters;
    this.pending = [];
    this.waiters = [];
    if (lines.length > 0) {
      fs.writeSync(this.fd, lines.join('\n') + '\n');
      fs.fdatasyncSync(this.fd);
    }
    for (const w of waiters) w();
  }

  close(): void {
    if (this.pending.length > 0) this.writeNow();
    fs.closeSync(this.fd);
  }

  get filename(): string {
    return this.file;
  }
}
