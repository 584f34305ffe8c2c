// The subscription calendar (Asia/Seoul) and the schedule request rules, pure.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/platform/errors.js';
import {
  dueAt,
  firstPeriodAfter,
  isPastEnd,
  parseDelaySeconds,
  parseScheduleRequest,
  type SchedulePlan,
  upcoming,
} from '../../src/schedules/rules.js';
import { formatTimestamp } from '../../src/platform/time.js';

const kst = (d: Date) => formatTimestamp(d);
const plan = (p: Partial<SchedulePlan>): SchedulePlan => ({
  startAt: '2027-01-31T09:00:00+09:00',
  interval: 'month',
  intervalCount: 1,
  ...p,
});

describe('the schedule calendar', () => {
  it('a monthly anchor on Jan 31 clamps to each month end and never drifts', () => {
    const p = plan({});
    const days = Array.from({ length: 13 }, (_, i) => kst(dueAt(p, i + 1)).slice(0, 10));
    expect(days).toEqual([
      '2027-01-31',
      '2027-02-28',
      '2027-03-31',
      '2027-04-30',
      '2027-05-31',
      '2027-06-30',
      '2027-07-31',
      '2027-08-31',
      '2027-09-30',
      '2027-10-31',
      '2027-11-30',
      '2027-12-31',
      '2028-01-31',
    ]);
    expect(kst(dueAt(plan({ startAt: '2028-01-31T09:00:00+09:00' }), 2))).toBe('2028-02-29T09:00:00+09:00');
  });

  it('uses the KST date of the anchor, not the UTC one', () => {
    // 2027-01-31 00:30 KST is Jan 30 in UTC
    const p = plan({ startAt: '2027-01-30T15:30:00Z' });
    expect(kst(dueAt(p, 2))).toBe('2027-02-28T00:30:00+09:00');
    expect(kst(dueAt(p, 3))).toBe('2027-03-31T00:30:00+09:00');
  });

  it('day, week, month and year steps times interval_count; Feb 29 yearly clamps', () => {
    const start = '2028-02-29T10:00:00+09:00';
    expect(kst(dueAt(plan({ startAt: start, interval: 'day', intervalCount: 3 }), 2))).toBe('2028-03-03T10:00:00+09:00');
    expect(kst(dueAt(plan({ startAt: start, interval: 'week', intervalCount: 2 }), 3))).toBe('2028-03-28T10:00:00+09:00');
    expect(kst(dueAt(plan({ startAt: start, interval: 'month', intervalCount: 3 }), 2))).toBe('2028-05-29T10:00:00+09:00');
    expect(kst(dueAt(plan({ startAt: start, interval: 'year', intervalCount: 1 }), 2))).toBe('2029-02-28T10:00:00+09:00');
    expect(kst(dueAt(plan({ startAt: start, interval: 'year', intervalCount: 1 }), 5))).toBe('2032-02-29T10:00:00+09:00');
  });

  it('upcoming stops at end_at and max_charges; resume finds the first period after now', () => {
    const p = plan({ endAt: '2027-04-30T09:00:00+09:00' });
    expect(upcoming(p, 1, 0, 10).map((d) => kst(d).slice(0, 10))).toEqual([
      '2027-01-31',
      '2027-02-28',
      '2027-03-31',
      '2027-04-30',
    ]);
    expect(upcoming(plan({ maxCharges: 2 }), 1, 1, 10)).toHaveLength(1);
    expect(isPastEnd(plan({ maxCharges: 2 }), 3, 2)).toBe(true);
    expect(firstPeriodAfter(plan({}), new Date('2027-04-01T00:00:00+09:00'), 2)).toBe(4);
    expect(firstPeriodAfter(plan({}), new Date('2027-01-01T00:00:00+09:00'), 2)).toBe(2);
  });
});

describe('schedule requests', () => {
  const now = new Date('2027-01-01T00:00:00Z');
  const ok = { billing_key: 'k', order_name: 'Plan', price: 9900, interval: 'month' };
  const refused = (body: Record<string, unknown>) => {
    try {
      parseScheduleRequest({ ...ok, ...body }, now);
    } catch (err) {
      return err instanceof ApiError ? err.errorCode : 'other';
    }
    return 'accepted';
  };

  it('defaults: now, every 1, retry 1 d / 3 d / 7 d then pause', () => {
    const r = parseScheduleRequest(ok, now);
    expect(r.plan).toMatchObject({ startAt: now.toISOString(), interval: 'month', intervalCount: 1 });
    expect(r.retryDelaysSeconds).toEqual([86_400, 259_200, 604_800]);
    expect(r.onExhausted).toBe('pause');
  });

  it('retry delays: seconds or ISO 8601 durations, positive', () => {
    expect(parseDelaySeconds('P1D')).toBe(86_400);
    expect(parseDelaySeconds('PT12H')).toBe(43_200);
    expect(parseDelaySeconds('P1W')).toBe(604_800);
    expect(parseDelaySeconds(90)).toBe(90);
    for (const bad of [0, -1, 1.5, 'P0D', 'P', 'PT', '1 day', null]) expect(() => parseDelaySeconds(bad)).toThrow(ApiError);
  });

  it('every bad input of the issue is 9400 (the key 2309)', () => {
    expect(refused({ interval: 'fortnight' })).toBe('INVALID_REQUEST');
    expect(refused({ interval_count: 0 })).toBe('INVALID_REQUEST');
    expect(refused({ interval_count: 366 })).toBe('INVALID_REQUEST');
    expect(refused({ price: 0 })).toBe('INVALID_REQUEST');
    expect(refused({ price: 10.5 })).toBe('INVALID_REQUEST');
    expect(refused({ tax_free: 10_000 })).toBe('INVALID_REQUEST');
    expect(refused({ start_at: 'next monday' })).toBe('INVALID_REQUEST');
    expect(refused({ start_at: '2026-12-31T23:50:00Z' })).toBe('INVALID_REQUEST');
    expect(refused({ start_at: '2026-12-31T23:58:00Z' })).toBe('accepted');
    expect(refused({ start_at: '2027-02-01T00:00:00Z', end_at: '2027-01-01T00:00:00Z' })).toBe('INVALID_REQUEST');
    expect(refused({ retry: { delays: [0] } })).toBe('INVALID_REQUEST');
    expect(refused({ retry: { delays: Array(11).fill(60) } })).toBe('INVALID_REQUEST');
    expect(refused({ retry: { on_exhausted: 'ignore' } })).toBe('INVALID_REQUEST');
    expect(refused({ billing_key: undefined })).toBe('SUBSCRIBE_BK_NOT_FOUND');
    expect(refused({ interval_count: 365, retry: { delays: Array(10).fill('PT1H') } })).toBe('accepted');
  });
});
