// Unit tests of the engine's internals that the SDK-level tests cannot reach precisely.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import proto from '@temporalio/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { parseArgs } from '../src/args.js';
import { Clock } from '../src/clock.js';
import { Journal } from '../src/journal.js';
import { memoSize, payloadsSize, truncateFailure } from '../src/limits.js';
import { decodeToken, encodeToken, namespaceId } from '../src/tokens.js';
import { parseVisibilityQuery, QueryParseError, type VisibilityRecord } from '../src/visibility.js';

describe('visibility query parser', () => {
  const known = (f: string) => ['WorkflowId', 'WorkflowType', 'ExecutionStatus', 'StartTime', 'CustomerId', 'Tags'].includes(f);
  const rec = (over: Partial<VisibilityRecord>): VisibilityRecord => ({
    WorkflowId: 'wf-1',
    WorkflowType: 'billing',
    ExecutionStatus: 'Running',
    StartTime: Date.parse('2026-01-02T00:00:00Z'),
    ...over,
  });

  it('combines comparisons with AND, OR, NOT and parentheses', () => {
    const p = parseVisibilityQuery(
      `WorkflowType = 'billing' AND (ExecutionStatus = "Running" OR ExecutionStatus = 'Failed') AND NOT WorkflowId = 'x'`,
      known,
    );
    expect(p(rec({}))).toBe(true);
    expect(p(rec({ ExecutionStatus: 'Completed' }))).toBe(false);
    expect(p(rec({ WorkflowId: 'x' }))).toBe(false);
  });

  it('compares StartTime as time and supports BETWEEN, IN and STARTS_WITH', () => {
    const between = parseVisibilityQuery(`StartTime BETWEEN '2026-01-01T00:00:00Z' AND '2026-01-03T00:00:00Z'`, known);
    expect(between(rec({}))).toBe(true);
    expect(between(rec({ StartTime: Date.parse('2026-02-01T00:00:00Z') }))).toBe(false);
    expect(parseVisibilityQuery(`StartTime > '2026-01-02T00:00:01Z'`, known)(rec({}))).toBe(false);
    expect(parseVisibilityQuery(`ExecutionStatus IN ('Completed', 'Running')`, known)(rec({}))).toBe(true);
    expect(parseVisibilityQuery(`WorkflowId STARTS_WITH 'wf-'`, known)(rec({}))).toBe(true);
    expect(parseVisibilityQuery(`Tags = 'vip'`, known)(rec({ Tags: ['new', 'vip'] }))).toBe(true);
    expect(parseVisibilityQuery(`CustomerId IS NULL`, known)(rec({}))).toBe(true);
  });

  it('ignores ORDER BY and matches everything on an empty query', () => {
    expect(parseVisibilityQuery('', known)(rec({}))).toBe(true);
    expect(parseVisibilityQuery(`WorkflowType = 'billing' ORDER BY StartTime DESC`, known)(rec({}))).toBe(true);
  });

  it('rejects unknown attributes and malformed queries', () => {
    expect(() => parseVisibilityQuery(`Nope = 'x'`, known)).toThrow(QueryParseError);
    expect(() => parseVisibilityQuery(`WorkflowId = `, known)).toThrow(QueryParseError);
    expect(() => parseVisibilityQuery(`WorkflowId = 'x' AND`, known)).toThrow(QueryParseError);
    expect(() => parseVisibilityQuery(`WorkflowId = 'unterminated`, known)).toThrow(QueryParseError);
    expect(() => parseVisibilityQuery(`StartTime > 'not a time'`, known)).toThrow(QueryParseError);
  });
});

describe('journal', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  const tempFile = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-journal-'));
    dirs.push(dir);
    return path.join(dir, 'wf.journal');
  };

  it('replays appended events and states, bytes included, and keeps them after compaction', async () => {
    const file = tempFile();
    const { journal } = Journal.open(file);
    journal.append({ key: 'a', base: 0, events: [{ id: 1 }, { id: 2 }], state: { n: 1, data: Buffer.from([0, 255]) } });
    journal.append({ key: 'a', base: 2, events: [{ id: 3 }], state: { n: 2, data: Buffer.from([7]) } });
    // A rolled-back speculative task: history shrinks to two events, then one more is written.
    journal.append({ key: 'a', base: 2, events: [{ id: 33 }], state: { n: 3, data: Buffer.from([8]) } });
    journal.append({ key: 'b', base: 0, events: [{ id: 1 }], state: { n: 9 } });
    await journal.flush();
    journal.close();

    const { journal: again, restored } = Journal.open(file);
    again.close();
    expect(restored.get('a')?.events).toEqual([{ id: 1 }, { id: 2 }, { id: 33 }]);
    const stateA = restored.get('a')?.state as { n: number; data: Buffer };
    expect(stateA.n).toBe(3);
    expect([...stateA.data]).toEqual([8]);
    expect(restored.get('b')?.state).toEqual({ n: 9 });
    // The file now holds one snapshot line per execution.
    expect(fs.readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(2);
  });

  it('forgets an execution recorded as deleted', async () => {
    const file = tempFile();
    const { journal } = Journal.open(file);
    journal.append({ key: 'a', base: 0, events: [{ id: 1 }], state: { n: 1 } });
    journal.append({ key: 'b', base: 0, events: [{ id: 1 }], state: { n: 2 } });
    journal.append({ key: 'a', base: 0, events: [], state: null, deleted: true });
    await journal.flush();
    journal.close();
    const { journal: again, restored } = Journal.open(file);
    again.close();
    expect([...restored.keys()]).toEqual(['b']);
  });

  it('ignores a torn last line left by a crash mid-write', async () => {
    const file = tempFile();
    const { journal } = Journal.open(file);
    journal.append({ key: 'a', base: 0, events: [{ id: 1 }], state: { n: 1 } });
    await journal.flush();
    journal.close();
    fs.appendFileSync(file, '{"key":"a","base":1,"events":[{"id":2}],"sta');
    const { journal: again, restored } = Journal.open(file);
    again.close();
    expect(restored.get('a')).toEqual({ state: { n: 1 }, events: [{ id: 1 }] });
  });
});

describe('clock', () => {
  const clocks: Clock[] = [];
  afterEach(() => {
    for (const c of clocks.splice(0)) c.stop();
  });
  const make = (timeSkipping: boolean) => {
    const c = new Clock(timeSkipping);
    clocks.push(c);
    return c;
  };
  const fired = (clock: Clock, at: number) => new Promise<number>((resolve) => clock.schedule(at, () => resolve(clock.now())));

  it('jumps to the next deadline once unlocked with no task outstanding', async () => {
    const clock = make(true);
    const start = clock.now();
    const day = fired(clock, start + 86_400_000);
    clock.setOutstanding('task', true);
    clock.unlock();
    clock.setOutstanding('task', false);
    expect(await day).toBeGreaterThanOrEqual(start + 86_400_000);
  });

  it('refuses an unlock when the counter, outstanding tasks included, is zero', () => {
    const clock = make(true);
    clock.unlock();
    expect(() => clock.unlock()).toThrow(/unbalanced/);
    clock.setOutstanding('task', true);
    expect(() => clock.unlock()).not.toThrow();
  });

  it('fires timers in deadline order and skips cancelled ones', async () => {
    const clock = make(true);
    const order: string[] = [];
    const base = clock.now();
    clock.schedule(base + 3000, () => order.push('c'));
    const cancelled = clock.schedule(base + 2000, () => order.push('x'));
    clock.schedule(base + 1000, () => order.push('a'));
    cancelled.cancel();
    const done = fired(clock, base + 4000);
    clock.unlock();
    await done;
    expect(order).toEqual(['a', 'c']);
  });

  it("skips to a sleeper's deadline with a task outstanding, locking again at the deadline", async () => {
    const clock = make(true);
    const start = clock.now();
    clock.unlock(); // result(): the counter is 0
    clock.setOutstanding('activity', true); // the running activity that calls env.sleep()
    const timer = fired(clock, start + 60_000);
    const late = fired(clock, start + 10 * 86_400_000);
    await clock.sleepUnlocked(start + 3_600_000);
    expect(clock.now()).toBeGreaterThanOrEqual(start + 3_600_000);
    expect(clock.now()).toBeLessThan(start + 3_700_000);
    expect(await timer).toBeGreaterThanOrEqual(start + 60_000);
    // Locked again (by the outstanding task): the far timer does not fire.
    expect(clock.describe()).toMatchObject({ locks: 0, sleepers: 0 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(clock.now()).toBeLessThan(start + 3_700_000);
    clock.setOutstanding('activity', false);
    expect(await late).toBeGreaterThanOrEqual(start + 10 * 86_400_000);
  });

  it('never jumps in dev-server mode', async () => {
    const clock = make(false);
    clock.schedule(clock.now() + 3_600_000, () => undefined);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(clock.describe().virtualOffsetMs).toBe(0);
  });
});

describe('task tokens', () => {
  const temporalToken = (namespaceId: string, activityId: string) => {
    const str = (field: number, v: string) =>
      Buffer.concat([Buffer.from([(field << 3) | 2, Buffer.byteLength(v)]), Buffer.from(v)]);
    return Buffer.concat([
      str(1, namespaceId),
      str(2, 'wf'),
      str(3, 'run-1'),
      Buffer.from([4 << 3, 7, 5 << 3, 2]),
      str(6, activityId),
    ]);
  };

  it("reads its own tokens and tokens in Temporal's format, resolving the namespace id", () => {
    const own = encodeToken({ k: 'act', ns: 'default', r: 'run-1', s: 7, a: 2 });
    expect(decodeToken(own)).toEqual({ k: 'act', ns: 'default', r: 'run-1', s: 7, a: 2 });
    const id = namespaceId('payments');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(namespaceId('payments')).toBe(id);
    expect(namespaceId('default')).not.toBe(id);
    expect(decodeToken(temporalToken(id, '1'), ['default', 'payments'])).toEqual({
      k: 'act',
      ns: 'payments',
      r: 'run-1',
      s: 7,
      a: 2,
    });
  });

  it('answers NamespaceNotFound for an unknown namespace id and INVALID_ARGUMENT for bytes that are no token', () => {
    expect(() => decodeToken(temporalToken(namespaceId('gone'), '1'), ['default'])).toThrow(/Namespace .* is not found\./);
    for (const bad of [new Uint8Array([1]), Buffer.from([0x0a, 0x05, 0x61]), Buffer.from('{nope')]) {
      expect(() => decodeToken(bad, ['default'])).toThrow(
        expect.objectContaining({ code: 3, message: 'Error deserializing task token.' }),
      );
    }
    expect(() => decodeToken(new Uint8Array(), ['default'])).toThrow(/Task token not set/);
  });
});

describe('payload sizes and failure truncation', () => {
  const { Payloads, Memo } = proto.temporal.api.common.v1;

  it('measures payloads and memos exactly as their protobuf encoding', () => {
    const payload = (data: number, meta: Record<string, number>) => ({
      data: Buffer.alloc(data, 1),
      metadata: Object.fromEntries(Object.entries(meta).map(([k, n]) => [k, Buffer.alloc(n, 2)])),
    });
    for (const payloads of [
      [],
      [payload(0, {})],
      [payload(10, { encoding: 16 })],
      [payload(300_000, { encoding: 20, x: 200 }), payload(5, {})],
    ]) {
      expect(payloadsSize({ payloads })).toBe(Payloads.encode({ payloads }).finish().length);
    }
    const fields = { a: payload(1000, { encoding: 10 }), long_key_name: payload(70_000, {}) };
    expect(memoSize({ fields })).toBe(Memo.encode({ fields }).finish().length);
    expect(payloadsSize(null)).toBe(0);
  });

  it('truncates a failure as Temporal does: info kept, strings cut to the budget, causes while it lasts', () => {
    const f = {
      message: 'm'.repeat(5000),
      source: 'TypeScriptSDK',
      stackTrace: 's'.repeat(5000),
      applicationFailureInfo: { type: 'Boom', nonRetryable: true, details: { payloads: [{ data: Buffer.alloc(9000) }] } },
      cause: { message: 'inner', serverFailureInfo: { nonRetryable: false } },
    };
    const t = truncateFailure(f, 1000)!;
    expect(t.applicationFailureInfo).toEqual({ type: 'Boom', nonRetryable: true });
    expect(t.source).toBe('TypeScriptSDK');
    expect(t.message!.length).toBeLessThan(1000);
    expect(t.stackTrace).toBe('');
    expect(t.cause).toBeUndefined();
    const roomy = truncateFailure(f, 20_000)!;
    expect(roomy.message).toBe(f.message);
    expect(roomy.cause).toEqual({ source: '', message: 'inner', stackTrace: '', serverFailureInfo: { nonRetryable: false } });
  });
});

describe('command line', () => {
  it('reads the time-skipping form `<port>` and listens on loopback unless given --ip', () => {
    expect(parseArgs(['7233'])).toEqual({ timeSkipping: true, port: 7233, host: '127.0.0.1' });
    expect(parseArgs(['7233', '--ip', '0.0.0.0'])).toEqual({ timeSkipping: true, port: 7233, host: '0.0.0.0' });
    expect(() => parseArgs(['not-a-port'])).toThrow(/usage/);
  });

  it('reads the start-dev form as @temporalio/testing passes it, ignoring flags meant for the real CLI', () => {
    const opts = parseArgs([
      'server',
      'start-dev',
      '--port',
      '7555',
      '--namespace',
      'paygate',
      '--ip',
      '127.0.0.1',
      '--log-format',
      'json',
      '--log-level',
      'debug',
      '--dynamic-config-value',
      'frontend.enableUpdateWorkflowExecution=true',
      '--db-filename',
      '/tmp/x.journal',
      '--headless',
      '--ui-port',
      '8233',
      '--search-attribute',
      'CustomerId=Keyword',
      '--search-attribute=Amount=Int',
      '--unknown-flag',
    ]);
    expect(opts).toMatchObject({
      timeSkipping: false,
      port: 7555,
      host: '127.0.0.1',
      namespaces: ['paygate'],
      dbFilename: '/tmp/x.journal',
      searchAttributes: { CustomerId: 'Keyword', Amount: 'Int' },
      logLevel: 'debug',
      logFormat: 'json',
    });
  });
});
