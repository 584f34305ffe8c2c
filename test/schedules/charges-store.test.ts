// The schedule store's period writes, which the schedule activity relies on to charge a period at most once:
// openCharge says whether it created the row, and recordPaid moves the schedule once, in one statement, only with
// the charge row it pays. Also the project reads by id, reused for a second like those by client key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStores, type Stores } from '../../src/composition/stores.js';
import { PROJECT_BY_CLIENT_KEY_REUSE_MS } from '../../src/projects/store.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';

describe('schedule store: a period opened and paid once', () => {
  let t: TestApp;
  let stores: Stores;
  let q: TestProject;
  beforeAll(async () => {
    t = await buildTestApp();
    stores = createStores(t.deps.database.db, t.deps.keyring!);
    q = await t.createProject();
  });
  afterAll(async () => {
    await t?.close();
  });

  const newSchedule = (scheduleId: string) =>
    stores.schedules.insert({
      scheduleId,
      applicationId: q.applicationId,
      request: {
        billingKey: 'bk-store-test',
        orderName: 'Pro plan',
        price: 9_900,
        taxFree: 0,
        plan: { interval: 'month', intervalCount: 1, startAt: '2026-12-25T00:00:00.000Z' },
        retryDelaysSeconds: [86_400],
        onExhausted: 'pause',
        metadata: undefined,
      },
      firstDueAt: new Date('2026-12-25T00:00:00.000Z'),
      now: new Date('2026-11-25T00:00:00.000Z'),
    });
  const paid = (receiptId: string) => ({
    attempt: 1,
    orderId: 'order-1',
    receiptId,
    chargedAt: new Date('2026-12-25T00:00:01.000Z'),
    nextChargeAt: new Date('2027-01-25T00:00:00.000Z'),
  });

  it('openCharge creates the row once; recordPaid counts the period once and keeps the first receipt', async () => {
    const schedule = await newSchedule('sch_store_once');
    const dueAt = new Date('2026-12-25T00:00:00.000Z');
    const first = await stores.schedules.openCharge(schedule, 1, dueAt, 'order-1');
    expect(first.opened).toBe(true);
    expect(first.charge).toMatchObject({ period: 1, status: 'retrying', price: 9_900, order_name: 'Pro plan' });
    const again = await stores.schedules.openCharge(schedule, 1, dueAt, 'order-1');
    expect(again).toEqual({ charge: first.charge, opened: false });

    const recorded = await stores.schedules.recordPaid(first.charge, paid('rcpt-1'), new Date('2026-12-25T00:00:02.000Z'));
    expect(recorded.schedule).toMatchObject({ charges_made: 1, status: 'active' });
    expect(recorded.schedule.next_charge_at).toEqual(new Date('2027-01-25T00:00:00.000Z'));
    // what it returns is what the database holds
    expect(recorded.charge).toEqual(await stores.schedules.findCharge(schedule.schedule_id, 1));
    expect(recorded.charge).toMatchObject({ status: 'paid', receipt_id: 'rcpt-1', attempts: 1 });

    // a second record (an activity run again after it recorded) changes nothing
    const twice = await stores.schedules.recordPaid(first.charge, paid('rcpt-2'), new Date('2026-12-25T00:00:03.000Z'));
    expect(twice.schedule).toEqual(await stores.schedules.find(schedule.schedule_id));
    expect(twice.schedule.charges_made).toBe(1);
    expect(twice.charge.receipt_id).toBe('rcpt-1');
  });

  it('a paid period moves a paused schedule neither to active nor its next charge time', async () => {
    const schedule = await newSchedule('sch_store_paused');
    const { charge } = await stores.schedules.openCharge(schedule, 1, new Date('2026-12-25T00:00:00.000Z'), 'order-1');
    await stores.schedules.setStatus(schedule.schedule_id, 'paused', new Date(), { nextChargeAt: null });
    const recorded = await stores.schedules.recordPaid(charge, paid('rcpt-3'), new Date());
    expect(recorded.schedule).toMatchObject({ status: 'paused', next_charge_at: null, charges_made: 1 });
  });

  it('reuses a project read by id for a second; a write through the store forgets it at once', async () => {
    const before = await stores.projects.findById(q.applicationId);
    await t.deps.database.db
      .updateTable('projects')
      .set({ name: 'renamed elsewhere' })
      .where('application_id', '=', q.applicationId)
      .execute();
    expect((await stores.projects.findById(q.applicationId))?.name).toBe(before?.name);
    await new Promise((resolve) => setTimeout(resolve, PROJECT_BY_CLIENT_KEY_REUSE_MS + 50));
    expect((await stores.projects.findById(q.applicationId))?.name).toBe('renamed elsewhere');

    await stores.projects.update(q.applicationId, { name: 'renamed here' });
    expect((await stores.projects.findById(q.applicationId))?.name).toBe('renamed here');
    expect(await stores.projects.findById('no-such-project')).toBeUndefined();
  });
});
