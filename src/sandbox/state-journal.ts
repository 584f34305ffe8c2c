// Where the sandbox PGs keep their state so a restart loses nothing (idempotency records, revoked keys,
// charges, OTP sessions, the SMS inbox, escrow orders, armed faults): an append-only journal in a folder
// of DATA_DIR, owner-only. A real PG keeps such records; this one keeps them sealed, since they hold
// OTPs, billing keys, CI / DI and shipping addresses: every line is AES-256-GCM under a key derived from
// the sandbox secret (a journal is readable only with the secret that wrote it).
//
// One line = one batch of records, written with one write() before the PG answers: a process killed at
// any point leaves either the whole batch or none of it (a torn last line after an OS crash fails its
// tag and is ignored). On open the journal is replayed, then rewritten as a snapshot of what is live
// (bounded maps forget their oldest entries, so the file stays as bounded as the memory); it is
// rewritten again after COMPACT_AFTER_LINES appends. One sandbox per folder at a time.
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';

/** One fact of a PG's state; `k` names its kind, the PG that wrote it reads it back. */
export interface JournalRecord {
  readonly k: string;
  readonly [field: string]: unknown;
}

export interface JournalSink {
  /** records one fact; inside `batch` it joins the batch's line */
  write(record: JournalRecord): void;
}

export interface SandboxJournal extends JournalSink {
  /** runs `fn`, then writes every record it wrote as one line: all of them survive a crash, or none */
  batch<T>(fn: () => T): T;
  close(): void;
}

/** the journal's folder inside DATA_DIR */
export const SANDBOX_STATE_DIR = 'sandbox-state';
export const JOURNAL_FILE = 'journal';
const COMPACT_AFTER_LINES = 200_000;
const RECORDS_PER_SNAPSHOT_LINE = 500;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A journal that keeps nothing (no folder given): the state lives as long as the process. */
export function memoryJournal(): SandboxJournal {
  return { write: () => undefined, batch: (fn) => fn(), close: () => undefined };
}

export interface OpenJournalOptions {
  readonly dir: string;
  readonly secret: string;
  /** replays one record into the PGs */
  readonly apply: (record: JournalRecord) => void;
  /** everything live, for the rewrite */
  readonly snapshot: () => Iterable<JournalRecord>;
  readonly warn?: (message: string) => void;
}

export function openSandboxJournal(opts: OpenJournalOptions): SandboxJournal & { readonly replayed: number } {
  mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
  const file = path.join(opts.dir, JOURNAL_FILE);
  const key = createHmac('sha256', opts.secret).update('sandbox-state-journal-v1').digest();

  const seal = (records: readonly JournalRecord[]): string => {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(records), 'utf8'), cipher.final()]);
    return `${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}\n`;
  };
  const open = (line: string): JournalRecord[] | undefined => {
    try {
      const raw = Buffer.from(line, 'base64url');
      if (raw.length <= IV_BYTES + TAG_BYTES) return undefined;
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      const text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
      const parsed: unknown = JSON.parse(text);
      return Array.isArray(parsed) ? (parsed as JournalRecord[]) : undefined;
    } catch {
      return undefined;
    }
  };

  let replayed = 0;
  if (existsSync(file)) {
    const lines = readFileSync(file, 'utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    let unreadable = 0;
    for (const [i, line] of lines.entries()) {
      const records = open(line);
      if (records === undefined) {
        // a torn last line is a write the crash interrupted: it never happened
        if (i < lines.length - 1) unreadable++;
        continue;
      }
      for (const record of records) opts.apply(record);
      replayed += records.length;
    }
    if (unreadable > 0 && replayed === 0) {
      // another secret wrote it: keep it aside (the old secret can read it) and start empty
      const aside = `${file}.unreadable-${Date.now()}`;
      renameSync(file, aside);
      opts.warn?.(`the sandbox state journal was written with another SANDBOX_SECRET; kept as ${aside}, starting empty`);
    } else if (unreadable > 0) {
      opts.warn?.(`the sandbox state journal had ${unreadable} unreadable line(s); they were skipped`);
    }
  }

  let fd = -1;
  let linesSinceCompaction = 0;
  const compact = (): void => {
    const tmp = `${file}.tmp`;
    const out = openSync(tmp, 'w', 0o600);
    try {
      let chunk: JournalRecord[] = [];
      for (const record of opts.snapshot()) {
        chunk.push(record);
        if (chunk.length >= RECORDS_PER_SNAPSHOT_LINE) {
          writeSync(out, seal(chunk));
          chunk = [];
        }
      }
      if (chunk.length > 0) writeSync(out, seal(chunk));
      fsyncSync(out);
    } finally {
      closeSync(out);
    }
    if (fd >= 0) closeSync(fd);
    renameSync(tmp, file);
    fd = openSync(file, 'a', 0o600);
    linesSinceCompaction = 0;
  };
  compact();

  let pending: JournalRecord[] | undefined;
  const append = (records: readonly JournalRecord[]): void => {
    if (fd < 0) throw new Error('the sandbox state journal is closed');
    writeSync(fd, seal(records));
    if (++linesSinceCompaction >= COMPACT_AFTER_LINES) compact();
  };

  return {
    replayed,
    write(record) {
      if (pending) pending.push(record);
      else append([record]);
    },
    batch(fn) {
      if (pending) return fn();
      pending = [];
      try {
        return fn();
      } finally {
        const records = pending;
        pending = undefined;
        if (records.length > 0) append(records);
      }
    },
    close() {
      if (fd >= 0) {
        fsyncSync(fd);
        closeSync(fd);
        fd = -1;
      }
    },
  };
}
