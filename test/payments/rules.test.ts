import { describe, expect, it } from 'vitest';
import { enforceMasked, isCardExpired, isLuhnValid, KEY_IN_METHOD, maskCardNumber } from '../../src/gateways/card-rules.js';
import {
  chargeIdempotencyKey,
  parseBillingKeyRequest,
  parseChargeRequest,
  parsePgAndMethod,
  renderBillingKey,
} from '../../src/payments/billing-rules.js';
import { ApiError, type ErrorName } from '../../src/platform/errors.js';
import {
  cancelIdempotencyKey,
  planCancel,
  PAYMENT_CANCELLED,
  PAYMENT_COMPLETE,
  PAYMENT_PENDING,
  renderReceipt,
} from '../../src/payments/receipt-rules.js';

const NOW = new Date('2026-11-22T00:00:00Z');
const VALID = {
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

function errorOf(fn: () => unknown): { name: ErrorName; pg?: string | undefined; message: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return { name: err.errorCode, pg: err.pgErrorCode, message: err.message };
    throw err;
  }
  throw new Error('expected an ApiError');
}

describe('card rules', () => {
  it('checks Luhn', () => {
    expect(isLuhnValid('4111111111111111')).toBe(true);
    expect(isLuhnValid('4111111111111112')).toBe(false);
    expect(isLuhnValid('378282246310005')).toBe(true);
    expect(isLuhnValid('41111111111x1111')).toBe(false);
  });

  it('masks to at most the first 6 and last 4 digits', () => {
    expect(maskCardNumber('4111111111111111')).toBe('411111******1111');
    expect(maskCardNumber('378282246310005')).toBe('378282*****0005');
    // a gateway that shows the whole number is masked again
    expect(enforceMasked('4111111111111111')).toBe('411111******1111');
    expect(enforceMasked('411111******1111')).toBe('411111******1111');
    // a gateway's own separators are kept when it shows no more than the rule allows
    expect(enforceMasked('4000-00**-****-0000')).toBe('4000-00**-****-0000');
    // and a number that shows more is masked again, separators or not
    expect(enforceMasked('4000-0012-****-0000')).toBe(maskCardNumber('4000-0012-****-0000'));
    expect(enforceMasked('4000-0012-3456-0000')).not.toContain('3456');
    expect(maskCardNumber('12345678')).toBe('12****78');
  });

  it('knows when a card expired', () => {
    expect(isCardExpired('26', '11', NOW)).toBe(false);
    expect(isCardExpired('26', '10', NOW)).toBe(true);
    expect(isCardExpired('25', '12', NOW)).toBe(true);
  });
});

describe('billing key request validation order', () => {
  it('pg missing -> 2300, method missing or not REST -> 2058', () => {
    expect(errorOf(() => parsePgAndMethod({ ...VALID, pg: undefined })).name).toBe('SUBSCRIBE_NEED_PG_METHOD');
    expect(errorOf(() => parsePgAndMethod({ ...VALID, pg: ' ', method: undefined })).name).toBe('SUBSCRIBE_NEED_PG_METHOD');
    expect(errorOf(() => parsePgAndMethod({ ...VALID, method: undefined })).name).toBe('RC_ONLY_REST_API');
    expect(errorOf(() => parsePgAndMethod({ ...VALID, method: '카드자동' })).name).toBe('RC_ONLY_REST_API');
    expect(errorOf(() => parsePgAndMethod([])).name).toBe('SUBSCRIBE_NEED_PG_METHOD');
    expect(parsePgAndMethod(VALID)).toEqual({ pg: 'sandbox_card' });
  });

  it('reports blanks in the documented order', () => {
    const order: [keyof typeof VALID, ErrorName][] = [
      ['card_no', 'SUBSCRIBE_CARD_NO_BLANK'],
      ['card_pw', 'SUBSCRIBE_CARD_PW_BLANK'],
      ['card_identity_no', 'SUBSCRIBE_CARD_IDENTITY_BLANK'],
      ['card_expire_year', 'SUBSCRIBE_CARD_EX_YEAR_BLANK'],
      ['card_expire_month', 'SUBSCRIBE_CARD_EX_MONTH_BLANK'],
      ['order_name', 'RC_NAME_BLANK'],
      ['subscription_id', 'RC_O_ID_BLANK'],
    ];
    const body: Record<string, unknown> = { ...VALID };
    for (const [field] of order) body[field] = '';
    for (const [field, name] of order) {
      expect(errorOf(() => parseBillingKeyRequest(body, NOW)).name).toBe(name);
      body[field] = VALID[field];
    }
    expect(parseBillingKeyRequest(body, NOW).subscriptionId).toBe('sub-1');
  });

  it('refuses bad months with 2084 and malformed cards locally with 2304 and no pg_error_code', () => {
    expect(errorOf(() => parseBillingKeyRequest({ ...VALID, card_expire_month: '13' }, NOW)).name).toBe('RC_INVALID_EXP_MONTH');
    expect(errorOf(() => parseBillingKeyRequest({ ...VALID, card_expire_month: '00' }, NOW)).name).toBe('RC_INVALID_EXP_MONTH');
    for (const card_no of ['4111111111111112', '4111-1111-1111-1111', '41111111', '41111111111111111']) {
      const err = errorOf(() => parseBillingKeyRequest({ ...VALID, card_no }, NOW));
      expect(err.name).toBe('SUBSCRIBE_PUBLISH_FAILED');
      expect(err.pg).toBeUndefined();
      expect(err.message).not.toContain(card_no);
    }
    expect(errorOf(() => parseBillingKeyRequest({ ...VALID, card_expire_year: '20' }, NOW)).name).toBe(
      'SUBSCRIBE_PUBLISH_FAILED',
    );
    expect(errorOf(() => parseBillingKeyRequest({ ...VALID, card_pw: '1' }, NOW)).name).toBe('SUBSCRIBE_PUBLISH_FAILED');
    expect(errorOf(() => parseBillingKeyRequest({ ...VALID, card_no: 4111111111111111 }, NOW)).name).toBe(
      'SUBSCRIBE_CARD_NO_BLANK',
    );
    expect(errorOf(() => parseBillingKeyRequest({ ...VALID, order_name: 'x'.repeat(100_000) }, NOW)).name).toBe(
      'INVALID_REQUEST',
    );
  });
});

describe('charge request', () => {
  const charge = { billing_key: '0123456789abcdef01234567', order_name: 'n', order_id: 'o-1', price: 1000 };
  it('validates amounts and ids', () => {
    expect(parseChargeRequest({ ...charge, card_quota: '03', tax_free: 100 })).toMatchObject({
      price: 1000,
      taxFree: 100,
      quota: 3,
    });
    expect(errorOf(() => parseChargeRequest({ ...charge, billing_key: '' })).name).toBe('SUBSCRIBE_BK_NOT_FOUND');
    expect(errorOf(() => parseChargeRequest({ ...charge, billing_key: 'not-a-key' })).name).toBe('SUBSCRIBE_BK_NOT_FOUND');
    expect(errorOf(() => parseChargeRequest({ ...charge, order_id: '' })).name).toBe('RC_O_ID_BLANK');
    expect(errorOf(() => parseChargeRequest({ ...charge, price: 0 })).name).toBe('INVALID_REQUEST');
    expect(errorOf(() => parseChargeRequest({ ...charge, price: 1.5 })).name).toBe('INVALID_REQUEST');
    expect(errorOf(() => parseChargeRequest({ ...charge, price: '1000' })).name).toBe('INVALID_REQUEST');
    expect(errorOf(() => parseChargeRequest({ ...charge, tax_free: 1001 })).name).toBe('INVALID_REQUEST');
    expect(errorOf(() => parseChargeRequest({ ...charge, metadata: [] })).name).toBe('INVALID_REQUEST');
  });

  it('derives the gateway key from (project, order_id) only', () => {
    expect(chargeIdempotencyKey('p', 'o-1')).toBe(chargeIdempotencyKey('p', 'o-1'));
    expect(chargeIdempotencyKey('p', 'o-1')).not.toBe(chargeIdempotencyKey('p', 'o-2'));
    expect(chargeIdempotencyKey('p', 'o-1')).not.toBe(chargeIdempotencyKey('q', 'o-1'));
  });
});

describe('cancel plan', () => {
  const paid = { status: PAYMENT_COMPLETE, price: 10_000, taxFree: 2_000, cancelledPrice: 0, cancelledTaxFree: 0 };
  it('cancels everything that remains by default', () => {
    expect(planCancel(paid, { cancelPrice: undefined, cancelTaxFree: undefined })).toEqual({
      amount: 10_000,
      taxFree: 2_000,
      fullyCancelled: true,
    });
  });
  it('keeps the leftover tax-free part within the leftover amount', () => {
    expect(planCancel(paid, { cancelPrice: 3_000, cancelTaxFree: undefined })).toEqual({
      amount: 3_000,
      taxFree: 0,
      fullyCancelled: false,
    });
    expect(planCancel({ ...paid, cancelledPrice: 7_000 }, { cancelPrice: 2_000, cancelTaxFree: undefined })).toEqual({
      amount: 2_000,
      taxFree: 1_000,
      fullyCancelled: false,
    });
  });
  it('refuses too much and finished receipts', () => {
    expect(errorOf(() => planCancel(paid, { cancelPrice: 10_001, cancelTaxFree: undefined })).name).toBe('CANCEL_PRICE_EXCEEDED');
    expect(errorOf(() => planCancel(paid, { cancelPrice: 100, cancelTaxFree: 200 })).name).toBe('CANCEL_PRICE_EXCEEDED');
    expect(
      errorOf(() => planCancel({ ...paid, status: PAYMENT_CANCELLED }, { cancelPrice: undefined, cancelTaxFree: undefined }))
        .name,
    ).toBe('RECEIPT_NOT_CANCELLABLE');
  });
  it('derives cancel keys from cancel_id or the refund state', () => {
    expect(cancelIdempotencyKey('r', 'c1', 0, 100)).toBe(cancelIdempotencyKey('r', 'c1', 500, 200));
    expect(cancelIdempotencyKey('r', undefined, 0, 100)).not.toBe(cancelIdempotencyKey('r', undefined, 100, 100));
  });
});

describe('rendering', () => {
  const card = {
    maskedNumber: '411111******1111',
    cardCompany: 'Sandbox VISA',
    cardCompanyCode: 'SVS',
    cardType: 'credit' as const,
  };

  it('renders the issuance response with every field and no receipt_data', () => {
    const body = renderBillingKey({
      billingKey: 'b'.repeat(24),
      receiptId: 'r'.repeat(24),
      subscriptionId: 'sub',
      pg: 'sandbox_card',
      card,
      expiresAt: new Date('2031-12-31T14:59:59Z'),
      publishedAt: new Date('2026-11-22T04:05:01Z'),
      requestedAt: new Date('2026-11-22T04:05:00Z'),
    });
    expect(body).toEqual({
      billing_key: 'b'.repeat(24),
      billing_data: { card_no: '411111******1111', card_company: 'Sandbox VISA', card_company_code: 'SVS', card_type: 'credit' },
      billing_expire_at: '2031-12-31T23:59:59+09:00',
      receipt_id: 'r'.repeat(24),
      subscription_id: 'sub',
      status: 11,
      status_locale: '빌링키발급완료',
      pg: 'sandbox_card',
      method: KEY_IN_METHOD,
      method_symbol: 'card_rebill_rest',
      method_origin: KEY_IN_METHOD,
      method_origin_symbol: 'card_rebill_rest',
      published_at: '2026-11-22T13:05:01+09:00',
      requested_at: '2026-11-22T13:05:00+09:00',
    });
  });

  it('leaves absent receipt keys out instead of null', () => {
    const body = renderReceipt({
      receiptId: 'r',
      orderId: 'o',
      orderName: 'n',
      price: 100,
      taxFree: 0,
      cancelledPrice: 0,
      cancelledTaxFree: 0,
      status: PAYMENT_PENDING,
      pg: 'sandbox_card',
      method: KEY_IN_METHOD,
      methodSymbol: 'card_rebill_rest',
      sandbox: true,
      requestedAt: new Date('2026-11-22T00:00:00Z'),
      cardQuota: 0,
    });
    expect(body.status_locale).toBe('결제대기');
    for (const key of ['purchased_at', 'cancelled_at', 'card_data', 'metadata', 'company_name'])
      expect(body).not.toHaveProperty(key);
    const paid = renderReceipt({
      receiptId: 'r',
      orderId: 'o',
      orderName: 'n',
      price: 100,
      taxFree: 0,
      cancelledPrice: 0,
      cancelledTaxFree: 0,
      status: PAYMENT_COMPLETE,
      pg: 'p',
      method: 'm',
      methodSymbol: 's',
      sandbox: false,
      requestedAt: new Date(0),
      cardQuota: 2,
      card,
      approvalNo: '123',
    });
    expect(paid.card_data).toEqual({
      card_approve_no: '123',
      card_no: '411111******1111',
      card_quota: '02',
      card_company: 'Sandbox VISA',
      card_company_code: 'SVS',
      card_type: 'credit',
    });
  });
});
