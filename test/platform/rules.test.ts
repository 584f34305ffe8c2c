// Pure helpers of the platform: the one timestamp format, ids and secrets, IP allow-list matching.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hashSecret, newId, newSecret, secretMatches } from '../../src/platform/ids.js';
import { ipAllowed, isIpOrCidr } from '../../src/platform/ip.js';
import { formatOptionalTimestamp, formatTimestamp } from '../../src/platform/time.js';

describe('formatTimestamp', () => {
  it('renders ISO 8601 with the +09:00 offset at second precision', () => {
    expect(formatTimestamp(new Date('2026-11-22T04:05:01.987Z'))).toBe('2026-11-22T13:05:01+09:00');
    expect(formatTimestamp(new Date('2026-12-31T20:00:00Z'))).toBe('2027-01-01T05:00:00+09:00');
  });

  it('parses back to the same second for any instant', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('1970-01-02T00:00:00Z'), max: new Date('9000-01-01T00:00:00Z'), noInvalidDate: true }),
        (date) => {
          const text = formatTimestamp(date);
          expect(text).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+09:00$/);
          expect(Date.parse(text)).toBe(Math.floor(date.getTime() / 1000) * 1000);
        },
      ),
    );
  });

  it('leaves absent values absent', () => {
    expect(formatOptionalTimestamp(null)).toBeUndefined();
    expect(formatOptionalTimestamp(undefined)).toBeUndefined();
  });
});

describe('ids and secrets', () => {
  it('ids are 24 lowercase hex characters and do not repeat', () => {
    const ids = new Set(Array.from({ length: 1000 }, newId));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{24}$/);
  });

  it('secrets match only their own digest', () => {
    const secret = newSecret();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const stored = hashSecret(secret);
    expect(stored).not.toContain(secret);
    expect(secretMatches(secret, stored)).toBe(true);
    expect(secretMatches(`${secret}x`, stored)).toBe(false);
    expect(secretMatches('', stored)).toBe(false);
    expect(secretMatches(secret, 'not-a-digest')).toBe(false);
  });
});

describe('IP allow-list', () => {
  it('an empty list allows any address', () => {
    expect(ipAllowed('203.0.113.9', [])).toBe(true);
  });

  it('matches single addresses and CIDR ranges, IPv4 and IPv6', () => {
    const list = ['10.0.0.1', '192.168.0.0/16', '2001:db8::/32', '::1'];
    expect(ipAllowed('10.0.0.1', list)).toBe(true);
    expect(ipAllowed('10.0.0.2', list)).toBe(false);
    expect(ipAllowed('192.168.255.1', list)).toBe(true);
    expect(ipAllowed('192.169.0.1', list)).toBe(false);
    expect(ipAllowed('2001:db8:1::5', list)).toBe(true);
    expect(ipAllowed('2001:db9::5', list)).toBe(false);
    expect(ipAllowed('::1', list)).toBe(true);
    expect(ipAllowed('0:0:0:0:0:0:0:1', list)).toBe(true);
  });

  it('treats IPv4-mapped IPv6 addresses as their IPv4 address', () => {
    expect(ipAllowed('::ffff:10.0.0.1', ['10.0.0.1'])).toBe(true);
    expect(ipAllowed('::ffff:192.168.3.4', ['192.168.0.0/16'])).toBe(true);
    expect(ipAllowed('::ffff:10.0.0.9', ['10.0.0.1'])).toBe(false);
    expect(ipAllowed('10.1.2.3', ['::ffff:10.0.0.0/104'])).toBe(true);
  });

  it('refuses what is not an address, and non-canonical notations', () => {
    expect(ipAllowed('not-an-ip', ['10.0.0.1'])).toBe(false);
    expect(ipAllowed('167772161', ['10.0.0.1'])).toBe(false);
    expect(ipAllowed('10.0.0.1', ['167772161'])).toBe(false);
    expect(ipAllowed('', ['0.0.0.0/0'])).toBe(false);
  });

  it('validates entries', () => {
    for (const ok of ['127.0.0.1', '10.0.0.0/8', '::1', '2001:db8::/32']) expect(isIpOrCidr(ok), ok).toBe(true);
    for (const bad of [
      '',
      '999.0.0.1',
      '10.0.0.0/33',
      'localhost',
      '10.0.0.0/',
      '10',
      '010.0.0.1',
      '0x0a.0.0.1',
      '167772161',
      '1.2.3',
      '::1/129',
      '10.0.0.0/8/8',
    ])
      expect(isIpOrCidr(bad), bad).toBe(false);
  });
});
