// Pure pieces of the sandbox: signed billing key tokens, the birth/sex decoder, the bounded map.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBillingKey, encodeBillingKey, type BillingKeyClaims } from '../../src/sandbox/billing-key-token.js';
import { BoundedMap } from '../../src/sandbox/bounded-map.js';
import { issuerFor } from '../../src/sandbox/card-pg.js';
import { decodeBirthSex } from '../../src/sandbox/identity-pg.js';

const claims: BillingKeyClaims = {
  kid: 'k1',
  masked: '411111******1111',
  issuer: 'SVS',
  kind: 'CREDIT',
  refuse: false,
  exp: Date.UTC(2039, 11, 31),
  iat: Date.UTC(2026, 10, 22),
};

describe('billing key tokens', () => {
  it('round-trip under the same secret only', () => {
    const token = encodeBillingKey('s1', claims);
    expect(decodeBillingKey('s1', token)).toEqual(claims);
    expect(decodeBillingKey('s2', token)).toBeUndefined();
  });

  it('reject any single-character change', () => {
    const token = encodeBillingKey('s1', claims);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    fc.assert(
      fc.property(fc.nat({ max: token.length - 1 }), fc.constantFrom(...alphabet), (index, replacement) => {
        fc.pre(token[index] !== replacement);
        const tampered = token.slice(0, index) + replacement + token.slice(index + 1);
        expect(decodeBillingKey('s1', tampered)).toBeUndefined();
      }),
    );
  });

  it('reject garbage without throwing', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        expect(decodeBillingKey('s1', s)).toBeUndefined();
        expect(decodeBillingKey('s1', `sbk_${s}`)).toBeUndefined();
      }),
    );
  });
});

describe('decodeBirthSex', () => {
  it('agrees with the century / sex / nationality table for every valid date and digit', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date(Date.UTC(1800, 0, 1)), max: new Date(Date.UTC(2099, 11, 31)), noInvalidDate: true }),
        fc.integer({ min: 0, max: 9 }),
        (date, digit) => {
          const yyyy = date.getUTCFullYear();
          const century = Math.floor(yyyy / 100);
          const expectedCentury = [1, 2, 5, 6].includes(digit) ? 19 : [3, 4, 7, 8].includes(digit) ? 20 : 18;
          const yymmdd = date.toISOString().slice(2, 10).replaceAll('-', '');
          const decoded = decodeBirthSex(`${yymmdd}${digit}`);
          if (century === expectedCentury) {
            expect(decoded).toEqual({
              birth: date.toISOString().slice(0, 10).replaceAll('-', ''),
              sex: digit % 2 === 1 ? 'M' : 'F',
              foreigner: digit >= 5 && digit <= 8 ? '1' : '0',
            });
          } else if (decoded !== undefined) {
            // The same YYMMDD read in another century: only 29 February can stop being a date.
            expect(decoded.birth.slice(0, 2)).toBe(String(expectedCentury));
            expect(decoded.birth.slice(2)).toBe(`${String(yyyy).slice(2)}${yymmdd.slice(2)}`);
          }
        },
      ),
    );
  });
});

describe('issuerFor', () => {
  it('prefers the longest matching prefix', () => {
    expect(issuerFor('9400000000000000').code).toBe('SDC');
    expect(issuerFor('9100000000000000').code).toBe('SDM');
    expect(issuerFor('1000000000000000').code).toBe('SOT');
  });
});

describe('BoundedMap', () => {
  it('forgets the oldest entries beyond its capacity; re-setting refreshes an entry', () => {
    const map = new BoundedMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.set('a', 3);
    map.set('c', 4);
    expect(map.has('b')).toBe(false);
    expect(map.get('a')).toBe(3);
    expect(map.get('c')).toBe(4);
    expect(map.size).toBe(2);
  });

  it('rejects a capacity below 1', () => {
    expect(() => new BoundedMap(0)).toThrow(RangeError);
  });
});

describe('billing key signature spelling', () => {
  it('rejects every other spelling of the last signature character', () => {
    const token = encodeBillingKey('s1', claims);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (const c of alphabet) {
      if (c === token.at(-1)) continue;
      expect(decodeBillingKey('s1', token.slice(0, -1) + c), c).toBeUndefined();
    }
  });
});
