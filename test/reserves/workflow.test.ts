// The reserved-charge workflow's state machine with stub activities (no database, no PG, no API): the timer to
// reserve_execute_at and the one charge, a revoke before it, a revoke refused while revoking or executing, a
// charge retried until it is made, and the update proofs. Virtual time on the project's engine; payloads sealed
// by paygate's codec.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReserveActivities } from '../../src/activities/reserves.js';
import {
  RESERVE_WORKFLOW_TYPE,
  type ReserveInput,
  reserveStateQuery,
  reserveWorkflowId,
  revokeReserveUpdate,
} from '../../src/reserves/contract.js';
import { UPDATE_NOT_AUTHORIZED } from '../../src/platform/temporal/messages.js';
import type { reserveWorkflow } from '../../src/workflows/reserves.js';
import {
  ActivityStubs,
  refusal,
  startWorkflowTestEnv,
  timerDurationsMs,
  type WorkerScope,
  type WorkflowTestEnv,
} from '../helpers/workflow-env.js';

const HOUR = 60 * 60 * 1000;
const REVOKED_AT = '2030-01-01T09:00:00+09:00';

type Stubs = ActivityStubs<ReserveActivities>;

/** A promise the test resolves: an activity that is still running while the test looks. */
function gate(): { readonly opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('reserve workflow (stub activities)', () => {
  let t: WorkflowTestEnv;
  beforeAll(async () => {
    t = await startWorkflowTestEnv();
  });
  afterAll(async () => {
    await t?.close();
  });

  const input = async (inMs: number): Promise<ReserveInput> => ({
    reserveId: `rsv-${randomUUID()}`,
    executeAt: new Date((await t.now()) + inMs).toISOString(),
  });
  const stubsWith = (overrides: Partial<ReserveActivities> = {}): Stubs =>
    new ActivityStubs<ReserveActivities>({
      executeReserve: async () => ({ status: 'paid', receiptId: 'rcpt-1' }),
      revokeReserve: async () => ({ revokedAt: REVOKED_AT }),
      ...overrides,
    });
  const start = (scope: WorkerScope, args: ReserveInput) =>
    scope.start<typeof reserveWorkflow>(RESERVE_WORKFLOW_TYPE, [args], reserveWorkflowId(args.reserveId));
  const revoke = (nonce: string = randomUUID()) => ({ args: [{ nonce }] as [{ nonce: string }] });

  it('sleeps until reserve_execute_at, then charges once and returns what the charge came to', async () => {
    const stubs = stubsWith();
    await t.withWorker(stubs, async (scope) => {
      const args = await input(2 * HOUR);
      const handle = await start(scope, args);
      await t.skipTime(2 * HOUR - 60_000);
      expect(await handle.query(reserveStateQuery)).toBe('reserved');
      expect(stubs.names()).toEqual([]);

      expect(await handle.result()).toEqual({ status: 'paid', receiptId: 'rcpt-1' });
      expect(stubs.inputsOf('executeReserve')).toEqual([{ reserveId: args.reserveId }]);
      expect(await t.now()).toBeGreaterThanOrEqual(Date.parse(args.executeAt));
      const [timer] = await timerDurationsMs(handle);
      expect(timer).toBeGreaterThan(2 * HOUR - 10_000);
      expect(timer).toBeLessThanOrEqual(2 * HOUR);
      expect(await handle.query(reserveStateQuery)).toBe('done');
      // nothing is revoked once it has run
      await expect(handle.executeUpdate(revokeReserveUpdate, revoke())).rejects.toThrow();
      expect(stubs.names()).toEqual(['executeReserve']);
    });
  });

  it('a reserve_execute_at already past charges at once, without a timer; a declined charge is its failed result', async () => {
    const stubs = stubsWith({ executeReserve: async () => ({ status: 'failed' }) });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, await input(-HOUR));
      expect(await handle.result()).toEqual({ status: 'failed' });
      expect(stubs.names()).toEqual(['executeReserve']);
      expect(await timerDurationsMs(handle)).toEqual([]);
    });
  });

  it('a revoke before reserve_execute_at ends it revoked: it never charges', async () => {
    const stubs = stubsWith();
    await t.withWorker(stubs, async (scope) => {
      const args = await input(HOUR);
      const handle = await start(scope, args);
      await t.skipTime(30 * 60_000);
      expect(await handle.executeUpdate(revokeReserveUpdate, revoke())).toEqual({ revokedAt: REVOKED_AT });
      expect(await handle.result()).toEqual({ status: 'revoked' });
      expect(await handle.query(reserveStateQuery)).toBe('revoked');
      await t.skipTime(2 * HOUR);
      expect(stubs.names()).toEqual(['revokeReserve']);
      expect(stubs.inputsOf('revokeReserve')).toEqual([{ reserveId: args.reserveId }]);
    });
  });

  it('while a revoke is being written, another is refused (its nonce taken, or the reserve revoking); the charge never runs', async () => {
    const writing = gate();
    const stubs = stubsWith({
      revokeReserve: async () => {
        await writing.opened;
        return { revokedAt: REVOKED_AT };
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, await input(HOUR));
      const nonce = randomUUID();
      const first = handle.executeUpdate(revokeReserveUpdate, revoke(nonce));
      await stubs.called('revokeReserve');
      expect(await handle.query(reserveStateQuery)).toBe('revoking');
      expect((await refusal(handle.executeUpdate(revokeReserveUpdate, revoke(nonce)))).type).toBe(UPDATE_NOT_AUTHORIZED);
      const again = await refusal(handle.executeUpdate(revokeReserveUpdate, revoke()));
      expect(again.type).toBe('RESERVE_NOT_REVOKABLE');
      expect(again.message).toBe('the reserve is revoking');
      writing.open();
      expect(await first).toEqual({ revokedAt: REVOKED_AT });
      expect(await handle.result()).toEqual({ status: 'revoked' });
      expect(stubs.names()).toEqual(['revokeReserve']);
    });
  });

  it('from the moment the timer fires it is executing: a revoke is refused; a failed charge is retried until made', async () => {
    const charging = gate();
    const stubs = stubsWith({
      executeReserve: async () => {
        // the first attempt fails (a PG or database outage), the second waits for the test
        if (stubs.calls.filter((c) => c.name === 'executeReserve').length === 1) throw new Error('PG unreachable');
        await charging.opened;
        return { status: 'paid', receiptId: 'rcpt-2' };
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const args = await input(HOUR);
      const handle = await start(scope, args);
      // the timer fires and the first attempt fails; its retry follows a second later
      await t.skipTime(HOUR + 1_000);
      await stubs.called('executeReserve', 2);
      expect(await handle.query(reserveStateQuery)).toBe('executing');
      const refused = await refusal(handle.executeUpdate(revokeReserveUpdate, revoke()));
      expect(refused.type).toBe('RESERVE_NOT_REVOKABLE');
      expect(refused.message).toBe('the reserve is executing');
      charging.open();
      expect(await handle.result()).toEqual({ status: 'paid', receiptId: 'rcpt-2' });
      expect(stubs.calls.map((c) => [c.name, c.attempt, c.input])).toEqual([
        ['executeReserve', 1, { reserveId: args.reserveId }],
        ['executeReserve', 2, { reserveId: args.reserveId }],
      ]);
    });
  });

  it('a revoke without a fresh proof is refused before it is accepted; the reserve still charges', async () => {
    const stubs = stubsWith();
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, await input(HOUR));
      expect((await refusal(handle.executeUpdate(revokeReserveUpdate, revoke('short')))).type).toBe(UPDATE_NOT_AUTHORIZED);
      // biome-ignore lint/suspicious/noExplicitAny: what a caller without the contract's types could send
      const none = await refusal(handle.executeUpdate(revokeReserveUpdate, { args: [undefined as any] }));
      expect(none.type).toBe(UPDATE_NOT_AUTHORIZED);
      expect(await handle.query(reserveStateQuery)).toBe('reserved');
      expect(await handle.result()).toEqual({ status: 'paid', receiptId: 'rcpt-1' });
      expect(stubs.names()).toEqual(['executeReserve']);
    });
  });
});
