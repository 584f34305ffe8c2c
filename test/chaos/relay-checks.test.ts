// The relay chaos suite's judgements of one answer or one webhook (chaos/relay-checks.ts), on the answers paygate
// gives: they must flag what the suite is meant to catch and nothing a correct server says.
import { describe, expect, it } from 'vitest';
import { hasCatalogCode, isNonFinal, tellsHowToLearnOutcome, webhookSubject } from '../../chaos/relay-checks.js';
import { errorCatalog } from '../../src/platform/errors.js';

const body = (name: keyof typeof errorCatalog, extra: Record<string, unknown> = {}) => ({
  error_code: name,
  code: errorCatalog[name].code,
  message: errorCatalog[name].message,
  ...extra,
});

describe('the relay checks of an answer', () => {
  it('takes an outage, a timeout and 9409 for non-final answers, and the spec’s refusals at 500 for final ones', () => {
    expect(isNonFinal(502, body('GATEWAY_UNAVAILABLE'))).toBe(true);
    expect(isNonFinal(504, body('GATEWAY_TIMEOUT'))).toBe(true);
    expect(isNonFinal(409, body('IDEMPOTENCY_IN_PROGRESS'))).toBe(true);
    expect(isNonFinal(500, body('INTERNAL_ERROR'))).toBe(true);
    for (const refusal of ['AUTH_CONFIRM_FAILED', 'SUBSCRIBE_REQUEST_FAILED', 'RC_ESCROW_SHIPPING_START_FAILED'] as const)
      expect(isNonFinal(500, body(refusal))).toBe(false);
    expect(isNonFinal(409, body('ORDER_ID_DUPLICATED'))).toBe(false);
    expect(isNonFinal(200, { receipt_id: 'r' })).toBe(false);
  });

  it('accepts a receipt_id or a retry with the same key as a way to learn the outcome, and nothing vaguer', () => {
    expect(tellsHowToLearnOutcome(body('GATEWAY_UNAVAILABLE'))).toBe(true);
    expect(tellsHowToLearnOutcome(body('GATEWAY_TIMEOUT'))).toBe(true);
    expect(tellsHowToLearnOutcome(body('INTERNAL_ERROR', { receipt_id: 'abc' }))).toBe(true);
    expect(tellsHowToLearnOutcome({ ...body('INTERNAL_ERROR'), message: 'Not known yet; retry with the same order_id.' })).toBe(
      true,
    );
    expect(tellsHowToLearnOutcome(body('INTERNAL_ERROR'))).toBe(false);
    expect(tellsHowToLearnOutcome(body('SERVICE_UNAVAILABLE'))).toBe(false);
  });

  it('wants a catalog code and its name on an error', () => {
    expect(hasCatalogCode(body('GATEWAY_UNAVAILABLE'))).toBe(true);
    expect(hasCatalogCode({ text: '<html>502</html>' })).toBe(false);
    expect(hasCatalogCode({ code: 9502 })).toBe(false);
  });
});

describe('the relay checks of a webhook', () => {
  it('gives one event the same subject whoever sent it, and two changes of one receipt different ones', () => {
    const paid = JSON.stringify({ receipt_id: 'r1', order_id: 'o1', status: 1, cancelled_price: 0, price: 1000 });
    const again = JSON.stringify({ price: 1000, receipt_id: 'r1', order_id: 'o1', status: 1, cancelled_price: 0, at: 'x' });
    const cancelled = JSON.stringify({ receipt_id: 'r1', order_id: 'o1', status: 1, cancelled_price: 500, price: 1000 });
    const reconciled = JSON.stringify({
      webhook_type: 'PAYMENT_RECONCILED',
      operation: 'charge',
      outcome: 'paid',
      receipt_id: 'r1',
      order_id: 'o1',
      status: 1,
    });
    expect(webhookSubject(paid)).toBe(webhookSubject(again));
    expect(webhookSubject(paid)).not.toBe(webhookSubject(cancelled));
    expect(webhookSubject(paid)).not.toBe(webhookSubject(reconciled));
    const shipped = JSON.stringify({ webhook_type: 'ESCROW_STATUS_CHANGED', receipt_id: 'r2', escrow_data: { status: 3 } });
    const confirmed = JSON.stringify({ webhook_type: 'ESCROW_STATUS_CHANGED', receipt_id: 'r2', escrow_data: { status: 1 } });
    expect(webhookSubject(shipped)).not.toBe(webhookSubject(confirmed));
    expect(webhookSubject('not json')).toBeUndefined();
  });
});
