// Request parsing on zod schemas: the whole error body (catalog entry, message, payload.message) and the
// parsed values for the edge cases a client can hit, and the spec's check order across fields.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { KEY_IN_METHOD } from '../../src/gateways/card-rules.js';
import { MAX_PRICE_WON, parseBillingKeyRequest, parseChargeRequest, parsePgAndMethod } from '../../src/payments/billing-rules.js';
import { ApiError, type ErrorBody } from '../../src/platform/errors.js';
import { parseCancelRequest } from '../../src/payments/receipt-rules.js';
import { fails, fields, isPlainId, validate } from '../../src/platform/validation.js';
import { parseOtp, parseReceiptIdBody, parseVerificationPg, parseVerificationRequest } from '../../src/verification/rules.js';

const NOW = new Date('2026-11-22T00:00:00Z');
const KEY_IN = {
  pg: 'sandbox_card',
  method: KEY_IN_METHOD,
  subscription_id: 'sub-1',
  order_name: 'Monthly plan',
  card_no: '4111111111111111',
  card_pw: '12',
  card_identity_no: '900101',
  card_expire_year: '30',
  card_expire_month: '12',
};
const CHARGE = { billing_key: '0123456789abcdef01234567', order_name: 'n', order_id: 'o-1', price: 1000 };
const VERIFY = {
  pg: 'sandbox_identity',
  method: '본인인증',
  order_name: 'Verify',
  authentication_id: 'a-1',
  username: 'Kim',
  phone: '01012345678',
  identity_no: '9001011',
  carrier: 'SKT',
};
const RECEIPT_ID = '0123456789abcdef01234567';

function bodyOf(fn: () => unknown): ErrorBody {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err.toBody();
    throw err;
  }
  throw new Error('expected an ApiError');
}

describe('validate with catalog failures', () => {
  it('throws the first failing rule as its catalog error, with its texts', () => {
    const schema = fields({
      a: z.custom<string>((v) => typeof v === 'string', fails('RC_NAME_BLANK')),
      b: z.custom<string>((v) => typeof v === 'string', fails('AUTH_CONFIRM_READY_FAILED', { payloadMessage: 'b is wrong.' })),
    });
    expect(bodyOf(() => validate(schema, { b: 1 }))).toEqual({
      error_code: 'RC_NAME_BLANK',
      code: 2003,
      message: 'order_name is empty.',
    });
    expect(bodyOf(() => validate(schema, { a: 'x' }))).toEqual({
      error_code: 'AUTH_CONFIRM_READY_FAILED',
      code: 2402,
      message: 'Sending the verification code failed.',
      payload: { message: 'b is wrong.' },
    });
    // an array or a scalar is a body without fields, not a malformed request
    expect(bodyOf(() => validate(schema, [1])).error_code).toBe('RC_NAME_BLANK');
    expect(validate(schema, { a: 'x', b: 'y', c: 1 })).toEqual({ a: 'x', b: 'y', c: 1 });
  });
});

describe('key-in parsing', () => {
  it('says a non-string field must be a string, and blanks with the catalog message', () => {
    expect(bodyOf(() => parseBillingKeyRequest({ ...KEY_IN, card_pw: 12 }, NOW))).toEqual({
      error_code: 'SUBSCRIBE_CARD_PW_BLANK',
      code: 2312,
      message: 'card_pw must be a string.',
    });
    expect(bodyOf(() => parseBillingKeyRequest({ ...KEY_IN, card_pw: null, card_no: ' ' }, NOW)).message).toBe(
      'card_no is empty.',
    );
  });

  it('checks every blank before the month, the month before the card, the card before the merchant strings', () => {
    const wrong = { card_no: '4111111111111112', card_expire_month: '13', subscription_id: 'x'.repeat(101) };
    expect(bodyOf(() => parseBillingKeyRequest({ ...KEY_IN, ...wrong, order_name: ' ' }, NOW)).error_code).toBe('RC_NAME_BLANK');
    expect(bodyOf(() => parseBillingKeyRequest({ ...KEY_IN, ...wrong }, NOW)).error_code).toBe('RC_INVALID_EXP_MONTH');
    expect(bodyOf(() => parseBillingKeyRequest({ ...KEY_IN, ...wrong, card_expire_month: '12' }, NOW)).message).toBe(
      'card_no must be a valid 15-16 digit card number without separators.',
    );
    expect(
      bodyOf(() => parseBillingKeyRequest({ ...KEY_IN, card_expire_year: '26', card_expire_month: '10' }, NOW)).message,
    ).toBe('The card has expired.');
    expect(bodyOf(() => parseBillingKeyRequest({ ...KEY_IN, subscription_id: 'x'.repeat(101), extra: [] }, NOW)).message).toBe(
      'subscription_id is longer than 100 characters.',
    );
  });

  it('keeps values untrimmed and reads extra.subscribe_test_payment', () => {
    const parsed = parseBillingKeyRequest({ ...KEY_IN, order_name: ' plan ', extra: { subscribe_test_payment: null } }, NOW);
    expect(parsed.orderName).toBe(' plan ');
    expect(parsed.verificationCharge).toBe(false);
    expect(parseBillingKeyRequest({ ...KEY_IN, extra: { subscribe_test_payment: true } }, NOW).verificationCharge).toBe(true);
    expect(bodyOf(() => parseBillingKeyRequest({ ...KEY_IN, extra: { subscribe_test_payment: 'true' } }, NOW)).message).toBe(
      'extra.subscribe_test_payment must be a boolean.',
    );
    expect(parsePgAndMethod({ pg: ' sandbox_card ', method: KEY_IN_METHOD })).toEqual({ pg: ' sandbox_card ' });
    // pg's length only after the method
    expect(bodyOf(() => parsePgAndMethod({ pg: 'x'.repeat(101), method: 'x' })).error_code).toBe('RC_ONLY_REST_API');
  });

  it('parses card_quota, tax_free and metadata as before', () => {
    expect(parseChargeRequest({ ...CHARGE, card_quota: 24 }).quota).toBe(24);
    expect(parseChargeRequest({ ...CHARGE, card_quota: '' }).quota).toBe(0);
    expect(parseChargeRequest({ ...CHARGE, card_quota: null, tax_free: null })).toMatchObject({ quota: 0, taxFree: 0 });
    for (const card_quota of [25, '25', ' 3', 3.5, '1e1', true]) {
      expect(bodyOf(() => parseChargeRequest({ ...CHARGE, card_quota })).message).toBe(
        'card_quota must be the instalment months, 0 to 24.',
      );
    }
    const metadata = { note: '한'.repeat(2730) };
    // 8 KB counts UTF-8 bytes of the JSON, not characters
    expect(bodyOf(() => parseChargeRequest({ ...CHARGE, metadata })).message).toBe('metadata is larger than 8192 bytes.');
    const small = { note: 'x' };
    expect(parseChargeRequest({ ...CHARGE, metadata: small }).metadata).toBe(small);
    expect(parseChargeRequest({ ...CHARGE, metadata: null }).metadata).toBeUndefined();
    // order_name's length only after the amounts
    expect(bodyOf(() => parseChargeRequest({ ...CHARGE, order_name: 'x'.repeat(201), price: 0 })).message).toBe(
      'price must be at least 1 won.',
    );
  });
});

describe('verification parsing', () => {
  it('trims texts and falls back to user.username / user.phone', () => {
    const parsed = parseVerificationRequest(
      {
        ...VERIFY,
        order_name: ' Verify ',
        username: 5,
        phone: ' ',
        user: { username: ' Lee ', phone: ' 01099998888 ' },
        client_ip: ' ::1 ',
      },
      'pg',
    );
    expect(parsed).toMatchObject({
      orderName: 'Verify',
      type: 'sms',
      clientIp: '::1',
      siteUrl: undefined,
      metadata: {},
      extra: {},
    });
    expect(parsed.person).toEqual({ name: 'Lee', phone: '01099998888', identityNo: '9001011', carrier: 'SKT' });
    expect(parseVerificationPg({ pg: ' sandbox_identity ', method: ' x ' })).toEqual({ pg: 'sandbox_identity' });
  });

  it('refuses locally with 2402 and the reason in payload.message, in the documented order', () => {
    expect(bodyOf(() => parseVerificationRequest({ ...VERIFY, identity_no: ' 900101', carrier: 'skt' }, 'pg'))).toEqual({
      error_code: 'AUTH_CONFIRM_READY_FAILED',
      code: 2402,
      message: 'Sending the verification code failed.',
      payload: { message: 'identity_no must be 7 digits.' },
    });
    expect(bodyOf(() => parseVerificationRequest({ ...VERIFY, client_ip: '10.0.0.0/8' }, 'pg')).payload?.message).toBe(
      'client_ip must be an IP address.',
    );
    // over-long kept texts come after every check of the person
    const longName = { ...VERIFY, order_name: 'x'.repeat(201), authenticate_type: 'SMS' };
    expect(bodyOf(() => parseVerificationRequest(longName, 'pg')).payload?.message).toBe(
      "authenticate_type must be 'sms' or 'pass'.",
    );
    expect(bodyOf(() => parseVerificationRequest({ ...longName, authenticate_type: null }, 'pg')).message).toBe(
      'order_name is longer than 200 characters.',
    );
    expect(
      bodyOf(() => parseVerificationRequest({ ...VERIFY, method: ' 본인인증 ', authentication_id: ' ' }, 'pg')).message,
    ).toBe('authentication_id is empty.');
  });

  it('reads receipt_id and the OTP', () => {
    expect(parseReceiptIdBody({ receipt_id: ' r-1 ' })).toEqual({ receiptId: 'r-1' });
    expect(bodyOf(() => parseReceiptIdBody([]))).toEqual({
      error_code: 'RC_NOT_FOUND',
      code: 2000,
      message: 'receipt_id is empty.',
    });
    expect(parseOtp({ otp: 5 }, 'pass')).toBe('');
    expect(parseOtp({ otp: ' 1 ' }, 'pass')).toBe(' 1 ');
    expect(bodyOf(() => parseOtp({ otp: ' 123456' }, 'sms')).message).toBe('The verification code must be 6 digits.');
  });
});

describe('cancel parsing', () => {
  it('keeps the documented order and treats absent, null and empty as not given', () => {
    expect(bodyOf(() => parseCancelRequest({ receipt_id: 5, cancel_price: -1 }))).toEqual({
      error_code: 'RC_NOT_FOUND',
      code: 2000,
      message: 'receipt_id is required.',
    });
    expect(bodyOf(() => parseCancelRequest({ receipt_id: 'r-1' })).message).toBe('The receipt was not found.');
    expect(bodyOf(() => parseCancelRequest({ receipt_id: RECEIPT_ID, cancel_username: 5, refund: [] })).message).toBe(
      'cancel_username must be a string of at most 100 characters.',
    );
    expect(bodyOf(() => parseCancelRequest({ receipt_id: RECEIPT_ID, refund: [], cancel_price: 0 })).message).toBe(
      'refund must be an object.',
    );
    expect(
      parseCancelRequest({ receipt_id: RECEIPT_ID, cancel_price: null, cancel_tax_free: -0, cancel_id: '', cancel_message: ' ' }),
    ).toEqual({
      receiptId: RECEIPT_ID,
      cancelPrice: undefined,
      cancelTaxFree: 0,
      cancelId: undefined,
      cancelMessage: ' ',
    });
    expect(Object.is(parseCancelRequest({ receipt_id: RECEIPT_ID, cancel_tax_free: -0 }).cancelTaxFree, 0)).toBe(true);
    expect(bodyOf(() => parseCancelRequest({ receipt_id: RECEIPT_ID, cancel_price: 0 })).message).toBe(
      'cancel_price must be a positive integer amount in won, at most 10000000000.',
    );
  });
});

describe('merchant ids and the price limit', () => {
  const refused = (field: string) => ({
    error_code: 'INVALID_REQUEST',
    code: 9400,
    message: 'The request is malformed.',
    payload: { message: `${field} must not contain control, invisible formatting or full-width characters.` },
  });

  it('isPlainId refuses controls, lone surrogates, separators, invisible marks and full-width look-alikes, and keeps other text', () => {
    for (const c of [
      '\u0000',
      '\t',
      '\u007f',
      '\u0085',
      '\u009f',
      '\ud800',
      '\u061c',
      '\u200b',
      '\u200d',
      '\u200e',
      '\u2028',
      '\u202a',
      '\u202e',
      '\u2060',
      '\u2066',
      '\u2069',
      '\ufeff',
      // look-alikes: soft hyphen, combining grapheme joiner, Hangul fillers, a variation selector, full-width forms
      '\u00ad',
      '\u034f',
      '\u115f',
      '\u3164',
      '\uffa0',
      '\ufe0f',
      '\uff21',
      '\uff10',
      '\u3000',
    ]) {
      expect(isPlainId(`a${c}b`), `U+${c.codePointAt(0)!.toString(16)}`).toBe(false);
    }
    for (const ok of ['order-1', '주문_2026/11', 'a b', 'émoji💳', 'ﾃｽﾄ', 'עברית', 'e\u0301'])
      expect(isPlainId(ok), ok).toBe(true);
  });

  it('each parser refuses its ids with 9400 naming the field', () => {
    expect(bodyOf(() => parseChargeRequest({ ...CHARGE, order_id: 'o\u202e1' }))).toEqual(refused('order_id'));
    expect(bodyOf(() => parseBillingKeyRequest({ ...KEY_IN, subscription_id: 's\u20661' }, NOW))).toEqual(
      refused('subscription_id'),
    );
    expect(bodyOf(() => parseCancelRequest({ receipt_id: RECEIPT_ID, cancel_id: 'c\u00851' }))).toEqual(refused('cancel_id'));
    expect(bodyOf(() => parseVerificationRequest({ ...VERIFY, authentication_id: 'a\u200f1' }, 'sandbox_identity'))).toEqual(
      refused('authentication_id'),
    );
    // blank still comes first with the spec's code
    expect(bodyOf(() => parseChargeRequest({ ...CHARGE, order_id: '' })).code).toBe(2005);
  });

  it(`price is at most ${MAX_PRICE_WON} won`, () => {
    expect(parseChargeRequest({ ...CHARGE, price: MAX_PRICE_WON }).price).toBe(MAX_PRICE_WON);
    expect(bodyOf(() => parseChargeRequest({ ...CHARGE, price: MAX_PRICE_WON + 1 }))).toMatchObject({
      code: 9400,
      message: `price must be at most ${MAX_PRICE_WON} won.`,
    });
  });
});
