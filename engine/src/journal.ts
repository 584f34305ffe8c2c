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
  /** The execution was removed (retention); replay forgets it. */
  deleted?: boolean;
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

const PRIVATE_FILE = 0o600;

/** Writes a snapshot next to the journal, syncs it, then atomically renames it over the journal. */
function writeSnapshot(file: string, records: JournalRecord[]): void {
  const tmp = `${file}.compact`;
  // Workflow histories are private: owner-only whatever the umask (a stale .compact file is replaced).
  fs.rmSync(tmp, { force: true });
  const out = fs.openSync(tmp, 'w', PRIVATE_FILE);
  for (const r of records) fs.writeSync(out, `${serialize(r)}\n`);
  fs.fdatasyncSync(out);
  fs.closeSync(out);
  fs.renameSync(tmp, file);
  const dir = fs.openSync(path.dirname(path.resolve(file)), 'r');
  try {
    fs.fsyncSync(dir);
  } finally {
    fs.closeSync(dir);
  }
}

export interface RestoredExecution {
  state: unknown;
  events: unknown[];
}

/** Past this many bytes appended since the last snapshot, the journal is rewritten as a snapshot. */
const COMPACT_AFTER_BYTES = 64 * 1024 * 1024;

export class Journal {
  private fd: number;
  private appendedBytes = 0;
  private pending: string[] = [];
  private waiters: Array<{ resolve(): void; reject(err: Error): void }> = [];
  private scheduled = false;
  private closed = false;

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
        if (rec.deleted) {
          restored.delete(rec.key);
          continue;
        }
        const cur = restored.get(rec.key) ?? { state: null, events: [] };
        cur.events.length = Math.min(cur.events.length, rec.base);
        for (const e of rec.events) cur.events.push(e);
        cur.state = rec.state;
        restored.set(rec.key, cur);
      }
    }
    fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true, mode: 0o700 });
    writeSnapshot(
      file,
      [...restored].map(([key, r]) => ({ key, base: 0, events: r.events, state: r.state })),
    );
    const fd = fs.openSync(file, 'a', PRIVATE_FILE);
    return { journal: new Journal(file, fd), restored };
  }

  /** True once enough has been appended that a snapshot would be much smaller than the journal. */
  get wantsCompaction(): boolean {
    return this.appendedBytes > COMPACT_AFTER_BYTES;
  }

  /** Replaces the journal with a snapshot of the given records (the complete current state). */
  compact(records: JournalRecord[]): void {
    if (this.pending.length > 0) this.writeNow();
    fs.closeSync(this.fd);
    writeSnapshot(this.file, records);
    this.fd = fs.openSync(this.file, 'a', PRIVATE_FILE);
    this.appendedBytes = 0;
  }

  append(record: JournalRecord): void {
    this.pending.push(serialize(record));
  }

  /** Resolves once everything appended so far is on disk. */
  flush(): Promise<void> {
    if (this.pending.length === 0 && !this.scheduled) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.writeNow());
      }
    });
  }

  private writeNow(): void {
    this.scheduled = false;
    if (this.closed) return;
    const lines = this.pending;
    const waiters = this.waiters;
    this.pending = [];
    this.waiters = [];
    try {
      if (lines.length > 0) {
        const chunk = `${lines.join('\n')}\n`;
        fs.writeSync(this.fd, chunk);
        fs.fdatasyncSync(this.fd);
        this.appendedBytes += chunk.length;
      }
    } catch (err) {
      // Callers must not be told a change is durable when it is not (e.g. disk full).
      for (const w of waiters) w.reject(err as Error);
      return;
    }
    for (const w of waiters) w.resolve();
  }

  close(): void {
    if (this.closed) return;
    this.writeNow();
    this.closed = true;
    fs.closeSync(this.fd);
  }

  get filename(): string {
    return this.file;
  }
}
