// The journal's state deltas (src/journal-delta.ts): replaying the lines rebuilds exactly the state they were taken
// from, each line carries only what changed, and compaction on open survives a crash in the middle.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyDelta, StateCursor, type StateDelta } from '../src/journal-delta.js';
import { Journal } from '../src/journal.js';
import { deserialize, serialize } from '../src/journal-codec.js';

/** A deterministic pseudo-random sequence (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface TestState {
  status: number;
  wft: { phase: string; attempt: number };
  memo: { data: Uint8Array } | null;
  signalRequestIds: string[];
  buildIds?: string[];
  updates: Record<string, { phase: string; request: { input: Uint8Array } }>;
  deadlines: Record<string, number>;
  activities: Record<string, { attempt: number; phase: string }>;
  extra?: string;
  buffered: Array<{ events: Array<{ id: number }> }>;
}

function mutate(s: TestState, next: () => number, step: number): void {
  const pick = Math.floor(next() * 11);
  switch (pick) {
    case 10:
      // Buffered groups: pushed one by one, flushed all at once (compared by identity, never changed inside).
      if (next() < 0.7) s.buffered.push({ events: [{ id: step }] });
      else s.buffered.splice(0);
      break;
    case 0:
      s.status = step;
      break;
    case 1:
      s.wft = { phase: next() < 0.5 ? 'scheduled' : 'started', attempt: step };
      break;
    case 2:
      s.signalRequestIds.push(`req-${step}`);
      if (s.signalRequestIds.length > 5) s.signalRequestIds.shift();
      break;
    case 3:
      s.updates[`u${step}`] = { phase: 'admitted', request: { input: Buffer.from([step & 255, 1]) } };
      break;
    case 4: {
      const open = Object.values(s.updates).filter((u) => u.phase !== 'completed');
      if (open[0]) open[0].phase = 'completed';
      break;
    }
    case 5:
      s.deadlines[`timer:${step % 4}`] = step;
      break;
    case 6: {
      const key = Object.keys(s.deadlines)[0];
      if (key) delete s.deadlines[key];
      break;
    }
    case 7:
      if (next() < 0.5) s.activities[String(step)] = { attempt: 1, phase: 'scheduled' };
      else delete s.activities[Object.keys(s.activities)[0] ?? ''];
      break;
    case 8:
      if (s.extra === undefined) s.extra = `x${step}`;
      else delete s.extra;
      break;
    default:
      s.buildIds = next() < 0.5 ? [`b${step}`] : [...(s.buildIds ?? []), `b${step}`];
      s.memo = next() < 0.3 ? null : { data: Buffer.from(`memo ${step}`) };
      break;
  }
}

describe('state deltas', () => {
  it('replaying every delta rebuilds the state exactly, over thousands of random changes', () => {
    const next = random(13);
    const s: TestState = {
      status: 1,
      wft: { phase: 'none', attempt: 1 },
      memo: null,
      signalRequestIds: [],
      updates: {},
      deadlines: {},
      activities: {},
      buffered: [],
    };
    const cursor = new StateCursor();
    let replayed: Record<string, unknown> | null = null;
    for (let step = 0; step < 2000; step++) {
      mutate(s, next, step);
      const delta = cursor.diff(s);
      if (delta !== null) replayed = applyDelta(replayed, deserialize<StateDelta>(delta));
      // Compared through the journal's own encoding (bytes as base64), which is what replay must reproduce.
      if (step % 25 === 0 || step < 200) expect(serialize(replayed)).toBe(serialize(s));
    }
  });

  it('says nothing when nothing changed, and only the changed entry when one did', () => {
    const s = {
      status: 1,
      updates: Object.fromEntries(
        Array.from({ length: 500 }, (_, i) => [`u${i}`, { phase: 'completed', request: { input: 'x'.repeat(200) } }]),
      ),
      signalRequestIds: Array.from({ length: 100 }, (_, i) => `r${i}`),
    };
    const cursor = new StateCursor();
    const first = cursor.diff(s);
    expect(first!.length).toBeGreaterThan(100_000);
    expect(cursor.diff(s)).toBeNull();
    s.updates.u500 = { phase: 'admitted', request: { input: 'y' } };
    s.signalRequestIds.shift();
    s.signalRequestIds.push('r100');
    s.status = 2;
    const delta = cursor.diff(s)!;
    expect(delta.length).toBeLessThan(200);
    expect(deserialize(delta)).toEqual({
      f: { status: 2 },
      m: { updates: { s: { u500: { phase: 'admitted', request: { input: 'y' } } } } },
      a: { signalRequestIds: { k: 1, p: ['r100'] } },
    });
  });
});

describe('journal compaction on open', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  it('a crash while the snapshot was written (a partial .compact file left) loses nothing', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-compact-'));
    dirs.push(dir);
    const file = path.join(dir, 'wf.journal');
    const { journal } = Journal.open(file);
    const cursor = new StateCursor();
    const state = { n: 0, updates: {} as Record<string, number> };
    for (let i = 1; i <= 50; i++) {
      state.n = i;
      state.updates[`u${i}`] = i;
      journal.appendLine(`{"key":"a","base":${i - 1},"events":[{"id":${i}}],"d":${cursor.diff(state)}}`);
    }
    await journal.flush();
    journal.close();
    // The process died after writing part of the snapshot, before the rename.
    fs.writeFileSync(`${file}.compact`, '{"key":"a","base":0,"events":[{"id":1}],"state":{"n":1');

    const reopened = Journal.open(file);
    reopened.journal.close();
    expect(reopened.restored.get('a')?.events).toHaveLength(50);
    expect(reopened.restored.get('a')?.state).toEqual(state);
    expect(reopened.stats.lines).toBe(50);
    expect(reopened.stats.bytesAfter).toBeLessThan(reopened.stats.bytesBefore);
    expect(fs.existsSync(`${file}.compact`)).toBe(false);
    expect(fs.readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(1);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);

    // And the compacted journal replays to the same state.
    const again = Journal.open(file);
    again.journal.close();
    expect(again.restored.get('a')?.state).toEqual(state);
  });
});
