// Durable storage for --db-filename: an append-only JSON-lines journal. Each line records what one change did to
// one execution: the history events appended since its previous line (`base` is the history length those events
// start at, so a rolled-back speculative workflow task is a shorter `base`) and what changed in its state (`d`, a
// delta: journal-delta.ts), so a line costs O(change) whatever the length of the history. A snapshot line carries
// the whole state instead (`state`). Lines are written and fdatasync'd before the RPC that caused them is answered
// (group commit). On open the journal is replayed and compacted into a fresh snapshot (temp file, fsync, rename).
import fs from 'node:fs';
import path from 'node:path';
import { applyDelta, type StateDelta } from './journal-delta.js';
import { deserialize, serialize } from './journal-codec.js';

export interface JournalRecord {
  key: string;
  base: number;
  events: unknown[];
  /** The whole state (snapshots, the server record); replaces what replay had. */
  state?: unknown;
  /** What changed in the state since the key's previous line. */
  d?: StateDelta;
  /** The execution was removed (retention); replay forgets it. */
  deleted?: boolean;
}

const PRIVATE_FILE = 0o600;

/**
 * Writes a snapshot next to the journal, syncs it, then atomically renames it over the journal: a crash at any
 * point leaves either the old journal or the complete snapshot. Returns the snapshot's size in bytes.
 */
function writeSnapshot(file: string, records: Iterable<JournalRecord>): number {
  const tmp = `${file}.compact`;
  // Workflow histories are private: owner-only whatever the umask (a stale .compact file is replaced).
  fs.rmSync(tmp, { force: true });
  const out = fs.openSync(tmp, 'w', PRIVATE_FILE);
  let bytes = 0;
  try {
    // Buffered in chunks: one write per record would be a syscall per run.
    let chunk: string[] = [];
    let chunkLength = 0;
    for (const r of records) {
      const line = `${serialize(r)}\n`;
      chunk.push(line);
      chunkLength += line.length;
      if (chunkLength >= 1 << 20) {
        bytes += fs.writeSync(out, chunk.join(''));
        chunk = [];
        chunkLength = 0;
      }
    }
    if (chunk.length > 0) bytes += fs.writeSync(out, chunk.join(''));
    fs.fdatasyncSync(out);
  } finally {
    fs.closeSync(out);
  }
  fs.renameSync(tmp, file);
  const dir = fs.openSync(path.dirname(path.resolve(file)), 'r');
  try {
    fs.fsyncSync(dir);
  } finally {
    fs.closeSync(dir);
  }
  return bytes;
}

export interface RestoredExecution {
  state: unknown;
  events: unknown[];
}

/**
 * Past this many bytes appended since the last snapshot — and more than the snapshot itself, so rewriting costs
 * O(1) per appended byte however much the runs hold — the journal is rewritten as a snapshot.
 */
const COMPACT_AFTER_BYTES = 64 * 1024 * 1024;

export interface JournalOpenStats {
  /** Bytes of the journal before and after the compaction on open. */
  bytesBefore: number;
  bytesAfter: number;
  lines: number;
}

export class Journal {
  private fd: number;
  private appendedBytes = 0;
  private snapshotBytes = 0;
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
  static open(file: string): { journal: Journal; restored: Map<string, RestoredExecution>; stats: JournalOpenStats } {
    const restored = new Map<string, RestoredExecution>();
    let bytesBefore = 0;
    let lines = 0;
    if (fs.existsSync(file)) {
      const text = fs.readFileSync(file, 'utf8');
      bytesBefore = Buffer.byteLength(text, 'utf8');
      for (const line of text.split('\n')) {
        if (!line) continue;
        lines++;
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
        if (rec.d) cur.state = applyDelta(cur.state as Record<string, unknown> | null, rec.d);
        else cur.state = rec.state;
        restored.set(rec.key, cur);
      }
    }
    fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true, mode: 0o700 });
    const bytesAfter = writeSnapshot(file, snapshotRecords(restored));
    const fd = fs.openSync(file, 'a', PRIVATE_FILE);
    const journal = new Journal(file, fd);
    journal.snapshotBytes = bytesAfter;
    return { journal, restored, stats: { bytesBefore, bytesAfter, lines } };
  }

  /** True once enough has been appended that a snapshot would be much smaller than the journal. */
  get wantsCompaction(): boolean {
    return this.appendedBytes > Math.max(COMPACT_AFTER_BYTES, this.snapshotBytes);
  }

  /** Replaces the journal with a snapshot of the given records (the complete current state). */
  compact(records: Iterable<JournalRecord>): void {
    if (this.pending.length > 0) this.writeNow();
    fs.closeSync(this.fd);
    this.snapshotBytes = writeSnapshot(this.file, records);
    this.fd = fs.openSync(this.file, 'a', PRIVATE_FILE);
    this.appendedBytes = 0;
  }

  append(record: JournalRecord): void {
    this.pending.push(serialize(record));
  }

  /** Appends a line already serialized (a JournalRecord's JSON, as core.ts builds delta lines). */
  appendLine(line: string): void {
    this.pending.push(line);
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

function* snapshotRecords(restored: Map<string, RestoredExecution>): Generator<JournalRecord> {
  for (const [key, r] of restored) yield { key, base: 0, events: r.events, state: r.state };
}
