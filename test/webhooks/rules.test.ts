// The pure rules of the delivery engine (src/webhooks/rules.ts): the ladder and its jitter, Retry-After,
// which addresses a webhook may reach, and secret masking.
import { describe, expect, it } from 'vitest';
import {
  blockedAddressReason,
  ladderDelayMs,
  maskSecret,
  parseRetryAfter,
  retryDelayMs,
  stateAfterAttempt,
} from '../../src/webhooks/rules.js';

const S = 1000;
const M = 60 * S;
const H = 60 * M;

describe('the retry ladder', () => {
  it('is 0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, then 10 h for every later attempt', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 20].map(ladderDelayMs)).toEqual([
      0,
      5 * S,
      5 * M,
      30 * M,
      2 * H,
      5 * H,
      10 * H,
      10 * H,
      10 * H,
      10 * H,
    ]);
  });

  it('jitters each rung by at most ±20 %', () => {
    expect(retryDelayMs(3, 0)).toBe(4 * M);
    expect(retryDelayMs(3, 0.5)).toBe(5 * M);
    expect(retryDelayMs(3, 0.999999)).toBeCloseTo(6 * M, -2);
  });

  it('takes Retry-After instead, capped at twice the rung', () => {
    expect(retryDelayMs(2, 0.9, 1 * S)).toBe(1 * S);
    expect(retryDelayMs(2, 0.9, H)).toBe(10 * S);
    expect(retryDelayMs(4, 0.1, 0)).toBe(0);
  });

  it('reads Retry-After as seconds or an HTTP date, and ignores anything else', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120 * S);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now)).toBe(60 * S);
    expect(parseRetryAfter('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0);
    for (const bad of [undefined, '', 'soon', '-5', '1.5', '12 hours'])
      expect(parseRetryAfter(bad, now), String(bad)).toBeUndefined();
  });

  it('ends a delivery on success, on the last attempt, or when its endpoint is gone', () => {
    const base = { succeeded: false, attempt: 3, lastAttempt: 10, endpointGone: false };
    expect(stateAfterAttempt(base)).toBe('ready');
    expect(stateAfterAttempt({ ...base, succeeded: true, attempt: 10 })).toBe('done');
    expect(stateAfterAttempt({ ...base, attempt: 10 })).toBe('failed');
    expect(stateAfterAttempt({ ...base, endpointGone: true })).toBe('failed');
  });
});

describe('addresses a webhook may reach', () => {
  it('only global unicast in production; loopback too in sandbox mode', () => {
    for (const ok of ['93.184.216.34', '2001:4860:4860::8888', '::ffff:93.184.216.34', '::5db8:d822', '64:ff9b::5db8:d822']) {
      expect(blockedAddressReason(ok, { sandbox: false }), ok).toBeUndefined();
    }
    for (const blocked of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.0.1',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '64:ff9b::7f00:1',
      // every other form that embeds an IPv4 address is judged by the address it carries
      '::7f00:1',
      '::127.0.0.1',
      '::a9fe:a9fe',
      '::a00:1',
      '::ffff:0:7f00:1',
      '64:ff9b:1::a9fe:a9fe',
      '2002:7f00:1::1',
      '2002:a9fe:a9fe::',
      '2001:0:4136:e378:8000:63bf:80ff:fffe',
      'not-an-ip',
    ]) {
      expect(blockedAddressReason(blocked, { sandbox: false }), blocked).toEqual(expect.any(String));
    }
    expect(blockedAddressReason('127.0.0.1', { sandbox: true })).toBeUndefined();
    expect(blockedAddressReason('::1', { sandbox: true })).toBeUndefined();
    expect(blockedAddressReason('10.0.0.1', { sandbox: true })).toEqual(expect.any(String));
    expect(blockedAddressReason('::a9fe:a9fe', { sandbox: true })).toMatch(/carries 169\.254\.169\.254 \(IPv4-compatible\)/);
  });
});

describe('secret masking', () => {
  it('shows the first 12 characters and stars for the rest', () => {
    expect(maskSecret('whsec_abcdefghijklmnop')).toBe('whsec_abcdef**********');
  });
});
