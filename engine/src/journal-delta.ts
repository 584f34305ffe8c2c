// What a journal line says about a run's state: only what changed since the run's previous line, so a line costs
// O(change), not O(state). A run's state holds maps that grow with its history (every update it has seen, with its
// request and outcome, up to Temporal's 2,000) and arrays with a sliding window (signal request ids); writing the
// whole state on every change made the journal grow quadratically with a run's history.
//
// A delta is `{ r?, f?, u?, m?, a? }`:
//   r: 1             the state starts from scratch (a run's first line, or its first line after a restart)
//   f: {key: value}  top-level fields set
//   u: [key]         top-level fields removed
//   m: {field: {s: {entryKey: value}, x: [entryKey]}}  entries of the map fields set / removed
//   a: {field: {k, p}}  array fields: drop the first k elements, then push p
// Lines are built from the serialized pieces the cursor already holds, so nothing is serialized twice.
import { serialize } from './journal-codec.js';

/** Fields keyed by id whose entries change one at a time (state.ts). */
const MAP_FIELDS = new Set(['activities', 'timers', 'children', 'updates', 'deadlines']);
/**
 * Fields that grow at the end and shrink at the front: windows of request ids, and the events buffered while a
 * workflow task runs (signals arriving during a long task: each line adds one, not the whole buffer again). Elements
 * are compared by identity, so an element must not change in place while it is in the array (buffered groups are
 * only changed once flushed out of it, core.ts `flushBuffered`).
 */
const ARRAY_FIELDS = new Set(['requestIds', 'signalRequestIds', 'buildIds', 'buffered']);
/** Update phases after which an update never changes again. */
const SETTLED_UPDATE = new Set(['completed', 'rejected', 'aborted']);

interface Entry {
  ref: unknown;
  json: string;
  /** An update's phase when it was serialized. */
  phase?: string;
}

export interface StateDelta {
  r?: 1;
  f?: Record<string, unknown>;
  u?: string[];
  m?: Record<string, { s?: Record<string, unknown>; x?: string[] }>;
  a?: Record<string, { k: number; p: unknown[] }>;
}

/** What the journal holds of one run's state, to write only the difference next time. */
export class StateCursor {
  private started = false;
  private readonly prims = new Map<string, unknown>();
  private readonly fields = new Map<string, string>();
  private readonly maps = new Map<string, Map<string, Entry>>();
  private readonly arrays = new Map<string, unknown[]>();

  /** The delta (JSON) that brings the journaled state to `state`, or null when nothing changed; then it is journaled. */
  diff(state: object): string | null {
    const parts: string[] = [];
    if (!this.started) {
      parts.push('"r":1');
      this.started = true;
    }
    const set: string[] = [];
    const maps: string[] = [];
    const arrays: string[] = [];
    let present = 0;
    const fields = state as Record<string, unknown>;
    for (const key in fields) {
      const value = fields[key];
      if (value === undefined) continue;
      present++;
      // Most fields are numbers, strings, booleans or null, compared as they are: this runs on every commit.
      if (value === null || typeof value !== 'object') {
        if (this.prims.has(key) && this.prims.get(key) === value) continue;
        this.forget(key);
        this.prims.set(key, value);
        set.push(`${JSON.stringify(key)}:${JSON.stringify(value)}`);
        continue;
      }
      const isMap = MAP_FIELDS.has(key) && !Array.isArray(value);
      const isArray = ARRAY_FIELDS.has(key) && Array.isArray(value);
      if (isMap && this.maps.has(key)) {
        const d = this.diffMap(key, value as Record<string, unknown>);
        if (d) maps.push(`${JSON.stringify(key)}:${d}`);
      } else if (isArray && this.arrays.has(key)) {
        const d = this.diffArray(key, value as unknown[]);
        if (d) arrays.push(`${JSON.stringify(key)}:${d}`);
      } else if (isMap || isArray) {
        // First seen (or another kind of field before): written whole, in the state's own field order, and remembered.
        this.forget(key);
        set.push(
          `${JSON.stringify(key)}:${isMap ? this.seedMap(key, value as Record<string, unknown>) : this.seedArray(key, value as unknown[])}`,
        );
      } else {
        const json = serialize(value);
        if (this.fields.get(key) === json) continue;
        this.forget(key);
        this.fields.set(key, json);
        set.push(`${JSON.stringify(key)}:${json}`);
      }
    }
    const removed: string[] = [];
    // Fields leave the state now and then (an optional one unset): when as many are present as known, none left.
    if (present !== this.prims.size + this.fields.size + this.maps.size + this.arrays.size) {
      for (const key of [...this.prims.keys(), ...this.fields.keys(), ...this.maps.keys(), ...this.arrays.keys()]) {
        if (fields[key] !== undefined) continue;
        this.forget(key);
        removed.push(key);
      }
    }
    if (set.length > 0) parts.push(`"f":{${set.join(',')}}`);
    if (removed.length > 0) parts.push(`"u":${JSON.stringify(removed)}`);
    if (maps.length > 0) parts.push(`"m":{${maps.join(',')}}`);
    if (arrays.length > 0) parts.push(`"a":{${arrays.join(',')}}`);
    return parts.length > 0 ? `{${parts.join(',')}}` : null;
  }

  private forget(key: string): void {
    this.prims.delete(key);
    this.fields.delete(key);
    this.maps.delete(key);
    this.arrays.delete(key);
  }

  private seedMap(field: string, value: Record<string, unknown>): string {
    const known = new Map<string, Entry>();
    this.maps.set(field, known);
    const parts: string[] = [];
    for (const [k, v] of Object.entries(value)) {
      if (v === undefined) continue;
      const json = serialize(v);
      known.set(k, { ref: v, json, phase: field === 'updates' ? settledPhase(v) : undefined });
      parts.push(`${JSON.stringify(k)}:${json}`);
    }
    return `{${parts.join(',')}}`;
  }

  private seedArray(field: string, value: unknown[]): string {
    this.arrays.set(field, value.slice());
    return serialize(value);
  }

  private diffMap(field: string, value: Record<string, unknown>): string | null {
    const known = this.maps.get(field)!;
    const set: string[] = [];
    let present = 0;
    // for...in, not Object.entries: no pair arrays for maps of up to 2,000 updates on every commit.
    for (const k in value) {
      const v = value[k];
      if (v === undefined) continue;
      present++;
      const prev = known.get(k);
      const phase = field === 'updates' ? settledPhase(v) : undefined;
      // A settled update is never touched again: not serialized again either (a run can hold 2,000 of them).
      if (phase !== undefined && prev?.ref === v && prev.phase === phase) continue;
      const json = serialize(v);
      if (prev?.json === json) {
        prev.ref = v;
        prev.phase = phase;
        continue;
      }
      known.set(k, { ref: v, json, phase });
      set.push(`${JSON.stringify(k)}:${json}`);
    }
    const removed: string[] = [];
    // Entries only leave a map now and then: when as many keys are present as are known, none left.
    if (present !== known.size) {
      for (const k of known.keys()) {
        if (value[k] !== undefined) continue;
        known.delete(k);
        removed.push(k);
      }
    }
    if (set.length === 0 && removed.length === 0) return null;
    const parts: string[] = [];
    if (set.length > 0) parts.push(`"s":{${set.join(',')}}`);
    if (removed.length > 0) parts.push(`"x":${JSON.stringify(removed)}`);
    return `{${parts.join(',')}}`;
  }

  private diffArray(field: string, value: unknown[]): string | null {
    const prev = this.arrays.get(field)!;
    this.arrays.set(field, value.slice());
    const k = windowShift(prev, value);
    if (k === null) return `{"k":${prev.length},"p":${serialize(value)}}`;
    const kept = prev.length - k;
    if (k === 0 && kept === value.length) return null;
    return `{"k":${k},"p":${serialize(value.slice(kept))}}`;
  }
}

function settledPhase(v: unknown): string | undefined {
  const phase = typeof v === 'object' && v !== null ? (v as { phase?: string }).phase : undefined;
  return phase !== undefined && SETTLED_UPDATE.has(phase) ? phase : undefined;
}

/** How many elements left the front of `prev` if `next` is `prev` minus a prefix plus new elements; null if not. */
function windowShift(prev: unknown[], next: unknown[]): number | null {
  for (let k = 0; k <= prev.length; k++) {
    const kept = prev.length - k;
    if (kept > next.length) continue;
    let same = true;
    for (let i = 0; i < kept; i++) {
      if (prev[k + i] !== next[i]) {
        same = false;
        break;
      }
    }
    if (same) return k;
  }
  return null;
}

/** Applies a journaled delta to a state (replay); returns the state, which it changes in place. */
export function applyDelta(state: Record<string, unknown> | null, d: StateDelta): Record<string, unknown> {
  const out: Record<string, unknown> = d.r || !state ? {} : state;
  for (const [k, v] of Object.entries(d.f ?? {})) out[k] = v;
  for (const k of d.u ?? []) delete out[k];
  for (const [field, change] of Object.entries(d.m ?? {})) {
    const map = (out[field] ?? {}) as Record<string, unknown>;
    for (const [k, v] of Object.entries(change.s ?? {})) map[k] = v;
    for (const k of change.x ?? []) delete map[k];
    out[field] = map;
  }
  for (const [field, change] of Object.entries(d.a ?? {})) {
    const arr = ((out[field] ?? []) as unknown[]).slice(change.k);
    for (const v of change.p) arr.push(v);
    out[field] = arr;
  }
  return out;
}
