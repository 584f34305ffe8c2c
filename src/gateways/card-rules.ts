// Card data as the gateway contract carries it: raw card details and the masked card, their format checks, Luhn and
// masking, and the name of the key-in method. Pure code; raw values never leave the caller.

/** The only method that can issue a billing key over REST, as the spec names it and a provider is asked for it. */
export const KEY_IN_METHOD = '카드자동(REST)';
export const KEY_IN_METHOD_SYMBOL = 'card_rebill_rest';

/** Card numbers the key-in flow accepts: 15 (AMEX-style) or 16 digits, no separators. */
const CARD_NUMBER = /^\d{15,16}$/;
const CARD_PASSWORD_2 = /^\d{2}$/;
/** Owner birth date YYMMDD or a 10-digit business registration number. */
const IDENTITY_NO = /^(\d{6}|\d{10})$/;
const EXPIRE_YEAR = /^\d{2}$/;
const EXPIRE_MONTH = /^(0[1-9]|1[0-2])$/;

export function isLuhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return digits.length > 0 && sum % 10 === 0;
}

export function isCardNumberWellFormed(cardNo: string): boolean {
  return CARD_NUMBER.test(cardNo) && isLuhnValid(cardNo);
}

export function isCardPasswordWellFormed(pw: string): boolean {
  return CARD_PASSWORD_2.test(pw);
}

export function isIdentityNoWellFormed(identityNo: string): boolean {
  return IDENTITY_NO.test(identityNo);
}

export function isExpireYearWellFormed(yy: string): boolean {
  return EXPIRE_YEAR.test(yy);
}

export function isExpireMonthValid(mm: string): boolean {
  return EXPIRE_MONTH.test(mm);
}

/** True when the card's last valid month (YY/MM, valid through its end) is before `now` (UTC). */
export function isCardExpired(expireYear: string, expireMonth: string, now: Date): boolean {
  const year = 2000 + Number(expireYear);
  const month = Number(expireMonth);
  const nowYear = now.getUTCFullYear();
  const nowMonth = now.getUTCMonth() + 1;
  return year < nowYear || (year === nowYear && month < nowMonth);
}

const VISIBLE_PREFIX = 6;
const VISIBLE_SUFFIX = 4;

/** Shows at most the first 6 and last 4 digits; every other character becomes '*'. */
export function maskCardNumber(cardNo: string): string {
  const chars = [...cardNo];
  // Inputs shorter than a card number keep fewer characters visible so most of it stays hidden.
  const short = chars.length < VISIBLE_PREFIX + VISIBLE_SUFFIX + 3;
  const prefix = short ? Math.floor(chars.length / 4) : VISIBLE_PREFIX;
  const suffix = short ? Math.floor(chars.length / 4) : VISIBLE_SUFFIX;
  return chars.map((c, i) => (i < prefix || i >= chars.length - suffix ? c : '*')).join('');
}

/** Already masked: separators aside, at most the first 6 and the last 4 digits show, '*' between. */
const SAFELY_MASKED = /^\d{0,6}\*+\d{0,4}$/;

/**
 * A number a gateway calls masked, kept as the gateway shows it when it shows no more than the first 6 and last 4
 * digits (its separators too: '4000-00**-****-0000'), else masked again by the rule: a gateway that shows too much can
 * never make paygate store or return more.
 */
export function enforceMasked(maskedNumber: string): string {
  return SAFELY_MASKED.test(maskedNumber.replace(/[-\s]/g, '')) ? maskedNumber : maskCardNumber(maskedNumber);
}

/** Raw card data as received from the merchant. Lives only between the request and the adapter. */
export interface CardDetails {
  /** digits only, 15-16 long */
  readonly number: string;
  /** first two digits of the card password */
  readonly password2: string;
  /** owner birth date YYMMDD or a 10-digit business registration number */
  readonly identityNo: string;
  /** YY */
  readonly expireYear: string;
  /** MM, 01-12 */
  readonly expireMonth: string;
}

/** Display-only card info; safe to store and return. */
export interface MaskedCard {
  /** at most the first 6 and last 4 digits visible, the rest '*' */
  readonly maskedNumber: string;
  readonly cardCompany: string;
  readonly cardCompanyCode: string;
  readonly cardType: 'credit' | 'check';
}
