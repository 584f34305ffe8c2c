// The sandbox card adapter against the real sandbox server: issuance, charges, refusals, cancels,
// key destruction, and the stateless keys surviving a restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandboxGateways } from '../../src/sandbox/server.js';
import { createGatewayRegistry } from '../../src/gateways/registry.js';
import { GatewayDeclinedError, type CardBillingGateway, type IssuedBillingKey } from '../../src/gateways/types.js';
import { startSandboxFixture, testCard, withLuhnDigit, type SandboxFixture } from './fixture.js';

let fx: SandboxFixture;
let card: CardBillingGateway;
let seq = 0;
const key = (label: string): string => `${label}-${++seq}-${process.pid}`;

beforeAll(async () => {
  fx = await startSandboxFixture();
  card = fx.card;
});
afterAll(async () => {
  await fx.close();
});

async function issue(number = '4111111111111111'): Promise<IssuedBillingKey> {
  return card.issueBillingKey({
    idempotencyKey: key('issue'),
    card: testCard({ number }),
    orderName: 'monthly plan',
    subscriptionId: key('sub'),
  });
}

async function charge(gatewayBillingKey: string, amount = 10_000, extra: { taxFree?: number; quota?: number } = {}) {
  return card.charge({
    idempotencyKey: key('charge'),
    gatewayBillingKey,
    amount,
    taxFree: extra.taxFree ?? 0,
    orderId: key('order'),
    orderName: 'monthly plan',
    quota: extra.quota ?? 0,
  });
}

async function declined(p: Promise<unknown>): Promise<GatewayDeclinedError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GatewayDeclinedError);
  return err as GatewayDeclinedError;
}

describe('sandbox_card billing keys', () => {
  it('issues a key for a Luhn-valid card with masked display data only', async () => {
    const issued = await issue('4111111111111111');
    expect(issued.card).toEqual({
      maskedNumber: '411111******1111',
      cardCompany: 'Sandbox VISA',
      cardCompanyCode: 'SVS',
      cardType: 'credit',
    });
    expect(issued.gatewayTid).toMatch(/^sbt_/);
    expect(issued.expiresAt.toISOString()).toBe('2039-12-31T14:59:59.000Z'); // 23:59:59 KST
    // The key itself carries no raw card data, not even the middle digits.
    const payload = Buffer.from(issued.gatewayBillingKey.slice(4).split('.')[0] ?? '', 'base64url').toString('utf8');
    expect(payload).not.toContain('4111111111111111');
    expect(payload).not.toContain('900101');
    expect(issued.gatewayBillingKey).not.toContain('4111111111111111');
  });

  it('derives the card company from the BIN', async () => {
    const cases: [string, string, string, 'credit' | 'check'][] = [
      ['5555555555554444', 'Sandbox Master', 'SMC', 'credit'],
      ['378282246310005', 'Sandbox AMEX', 'SAX', 'credit'],
      [withLuhnDigit('910000000000000'), 'Sandbox Domestic', 'SDM', 'credit'],
      [withLuhnDigit('940000000000000'), 'Sandbox Domestic Check', 'SDC', 'check'],
      [withLuhnDigit('620000000000000'), 'Sandbox Card', 'SOT', 'credit'],
    ];
    for (const [number, company, code, type] of cases) {
      const issued = await issue(number);
      expect(issued.card).toMatchObject({ cardCompany: company, cardCompanyCode: code, cardType: type });
      expect(issued.card.maskedNumber.slice(0, 6)).toBe(number.slice(0, 6));
      expect(issued.card.maskedNumber.slice(-4)).toBe(number.slice(-4));
    }
  });

  it('refuses the issuance test card 4000000000000002 with a pg error code and reason', async () => {
    const err = await declined(issue('4000000000000002'));
    expect(err.pgErrorCode).toBe('C103');
    expect(err.pgMessage).toMatch(/refused/);
  });

  it('refuses a Luhn-invalid number, an expired card and a blank password', async () => {
    expect((await declined(issue('4111111111111112'))).pgErrorCode).toBe('C101');
    const now = new Date();
    const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
    const expired = card.issueBillingKey({
      idempotencyKey: key('issue'),
      card: testCard({
        // any card but the evergreen one expires
        number: '4242424242424242',
        expireYear: String(lastMonth.getUTCFullYear() % 100).padStart(2, '0'),
        expireMonth: String(lastMonth.getUTCMonth() + 1).padStart(2, '0'),
      }),
      orderName: 'x',
      subscriptionId: key('sub'),
    });
    expect((await declined(expired)).pgErrorCode).toBe('C102');
    const blank = card.issueBillingKey({
      idempotencyKey: key('issue'),
      card: testCard({ password2: '  ' }),
      orderName: 'x',
      subscriptionId: key('sub'),
    });
    expect((await declined(blank)).pgErrorCode).toBe('C104');
  });

  it('accepts a card valid through the current month', async () => {
    const now = new Date();
    const issued = await card.issueBillingKey({
      idempotencyKey: key('issue'),
      card: testCard({
        expireYear: String(now.getUTCFullYear() % 100).padStart(2, '0'),
        expireMonth: String(now.getUTCMonth() + 1).padStart(2, '0'),
      }),
      orderName: 'x',
      subscriptionId: key('sub'),
    });
    expect(issued.expiresAt.getTime()).toBeGreaterThan(now.getTime());
  });
});

describe('sandbox_card charges and cancels', () => {
  it('charges a key and reports the masked card', async () => {
    const issued = await issue('5555555555554444');
    const result = await charge(issued.gatewayBillingKey, 12_300, { quota: 3 });
    expect(result.gatewayTid).toMatch(/^sch_/);
    expect(result.approvalNo).toMatch(/^\d{8}$/);
    expect(result.quota).toBe(3);
    expect(result.card).toEqual(issued.card);
    const state = await fx.getJson(`/_sandbox/charges/${result.gatewayTid}`);
    expect(state.body).toMatchObject({ amount: 12_300, cancelled_amount: 0 });
  });

  it('refuses every charge of a key issued from 4000000000009995', async () => {
    const issued = await issue('4000000000009995');
    for (let i = 0; i < 2; i++) {
      const err = await declined(charge(issued.gatewayBillingKey));
      expect(err.pgErrorCode).toBe('C204');
    }
  });

  it('refuses invalid amounts, instalments on check cards and forged keys', async () => {
    const issued = await issue();
    expect((await declined(charge(issued.gatewayBillingKey, 1_000, { taxFree: 2_000 }))).pgErrorCode).toBe('C205');
    expect((await declined(charge(issued.gatewayBillingKey, 1_000, { quota: 37 }))).pgErrorCode).toBe('C207');
    const check = await issue(withLuhnDigit('940000000000000'));
    expect((await declined(charge(check.gatewayBillingKey, 50_000, { quota: 3 }))).pgErrorCode).toBe('C206');
    expect((await charge(check.gatewayBillingKey, 50_000)).quota).toBe(0);

    const [payload, signature] = issued.gatewayBillingKey.slice(4).split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const forgedPayload = Buffer.from(JSON.stringify({ ...claims, refuse: false, exp: (claims.exp as number) + 1 })).toString(
      'base64url',
    );
    expect((await declined(charge(`sbk_${forgedPayload}.${signature}`))).pgErrorCode).toBe('C201');
    expect((await declined(charge('not-a-key'))).pgErrorCode).toBe('C201');
  });

  it('cancels partially, then the rest, then refuses more', async () => {
    const issued = await issue();
    const paid = await charge(issued.gatewayBillingKey, 10_000, { taxFree: 1_000 });
    const cancel = (amount: number, taxFree = 0) =>
      card.cancel({ idempotencyKey: key('cancel'), gatewayTid: paid.gatewayTid, amount, taxFree, reason: 'customer request' });

    const first = await cancel(3_000);
    expect(first.gatewayCancelTid).toMatch(/^scc_/);
    // 7,000 remain, 1,000 of them tax free: 7,000 all taxable exceeds the 6,000 taxable part.
    expect((await declined(cancel(7_000, 0))).pgErrorCode).toBe('C303');
    expect((await declined(cancel(7_001, 1_000))).pgErrorCode).toBe('C302');
    await cancel(7_000, 1_000);
    expect((await declined(cancel(1))).pgErrorCode).toBe('C302');
    const state = await fx.getJson(`/_sandbox/charges/${paid.gatewayTid}`);
    expect(state.body).toMatchObject({ amount: 10_000, cancelled_amount: 10_000, cancelled_tax_free: 1_000, cancel_count: 2 });
  });

  it('replays a cancel with the same idempotency key instead of cancelling twice', async () => {
    const issued = await issue();
    const paid = await charge(issued.gatewayBillingKey, 5_000);
    const req = { idempotencyKey: key('cancel'), gatewayTid: paid.gatewayTid, amount: 2_000, taxFree: 0, reason: 'r' };
    const a = await card.cancel(req);
    const b = await card.cancel(req);
    expect(b).toEqual(a);
    const state = await fx.getJson(`/_sandbox/charges/${paid.gatewayTid}`);
    expect(state.body).toMatchObject({ cancelled_amount: 2_000, cancel_count: 1 });
  });

  it('refuses a cancel of an unknown tid', async () => {
    const err = await declined(
      card.cancel({ idempotencyKey: key('cancel'), gatewayTid: 'sch_unknown', amount: 1, taxFree: 0, reason: 'r' }),
    );
    expect(err.pgErrorCode).toBe('C301');
  });

  it('destroys a key: later charges are refused, destroying again is harmless', async () => {
    const issued = await issue();
    await charge(issued.gatewayBillingKey);
    await card.destroyBillingKey({ gatewayBillingKey: issued.gatewayBillingKey });
    expect((await declined(charge(issued.gatewayBillingKey))).pgErrorCode).toBe('C202');
    await card.destroyBillingKey({ gatewayBillingKey: issued.gatewayBillingKey });
    // Other keys of the same card stay usable.
    const other = await issue();
    await expect(charge(other.gatewayBillingKey)).resolves.toMatchObject({ quota: 0 });
  });

  it('refuses charges once the card behind the key has expired', async () => {
    const issued = await issue('4242424242424242');
    fx.advance(issued.expiresAt.getTime() - Date.now() + 1_000);
    try {
      expect((await declined(charge(issued.gatewayBillingKey))).pgErrorCode).toBe('C203');
    } finally {
      fx.advance(-(issued.expiresAt.getTime() - Date.now() + 1_000));
    }
  });
});

describe('stateless billing keys', () => {
  it('survive a sandbox restart with the same secret and are refused under another secret', async () => {
    const first = await startSandboxGateways({ secret: 'restart-secret' });
    const firstRegistry = createGatewayRegistry({ sandboxUrl: first.url, timeoutMs: 5_000 });
    const issued = await firstRegistry.get('sandbox_card')!.card!.issueBillingKey({
      idempotencyKey: key('issue'),
      card: testCard(),
      orderName: 'x',
      subscriptionId: key('sub'),
    });
    await firstRegistry.close();
    await first.close();

    const second = await startSandboxGateways({ secret: 'restart-secret' });
    const other = await startSandboxGateways({ secret: 'another-secret' });
    const secondRegistry = createGatewayRegistry({ sandboxUrl: second.url, timeoutMs: 5_000 });
    const otherRegistry = createGatewayRegistry({ sandboxUrl: other.url, timeoutMs: 5_000 });
    try {
      const paid = await secondRegistry.get('sandbox_card')!.card!.charge({
        idempotencyKey: key('charge'),
        gatewayBillingKey: issued.gatewayBillingKey,
        amount: 1_000,
        taxFree: 0,
        orderId: key('order'),
        orderName: 'x',
        quota: 0,
      });
      expect(paid.card).toEqual(issued.card);
      const err = await declined(
        otherRegistry.get('sandbox_card')!.card!.charge({
          idempotencyKey: key('charge'),
          gatewayBillingKey: issued.gatewayBillingKey,
          amount: 1_000,
          taxFree: 0,
          orderId: key('order'),
          orderName: 'x',
          quota: 0,
        }),
      );
      expect(err.pgErrorCode).toBe('C201');
    } finally {
      await secondRegistry.close();
      await otherRegistry.close();
      await second.close();
      await other.close();
    }
  });
});

describe('registry', () => {
  it('offers sandbox_card with billing keys, sandbox_noauto without, sandbox_identity with identity, two escrow PGs', () => {
    expect(fx.registry.names).toEqual([
      'sandbox_card',
      'sandbox_noauto',
      'sandbox_identity',
      'sandbox_escrow_a',
      'sandbox_escrow_b',
    ]);
    for (const escrowPg of ['sandbox_escrow_a', 'sandbox_escrow_b']) {
      expect(fx.registry.get(escrowPg)?.escrow, escrowPg).toBeDefined();
      expect(fx.registry.get(escrowPg)?.payments, escrowPg).toBeDefined();
      expect(fx.registry.get(escrowPg)?.card, escrowPg).toBeUndefined();
    }
    expect(fx.registry.get('sandbox_card')?.escrow).toBeUndefined();
    expect(fx.registry.get('sandbox_card')?.card).toBeDefined();
    expect(fx.registry.get('sandbox_noauto')).toBeDefined();
    expect(fx.registry.get('sandbox_noauto')?.card).toBeUndefined();
    expect(fx.registry.get('sandbox_identity')?.identity).toBeDefined();
    expect(fx.registry.get('sandbox_identity')?.card).toBeUndefined();
    expect(fx.registry.get('nope')).toBeUndefined();
  });

  it("the evergreen test card (the README's) never expires in the sandbox: issued with a past year, charged past its expiry", async () => {
    const now = new Date();
    const lastYear = String((now.getUTCFullYear() - 1) % 100).padStart(2, '0');
    const issued = await card.issueBillingKey({
      idempotencyKey: key('issue'),
      card: testCard({ number: '4111111111111111', expireYear: lastYear, expireMonth: '01' }),
      orderName: 'x',
      subscriptionId: key('sub'),
    });
    const ahead = 50 * 365 * 24 * 3_600_000;
    fx.advance(ahead);
    try {
      await expect(charge(issued.gatewayBillingKey)).resolves.toMatchObject({ quota: 0 });
    } finally {
      fx.advance(-ahead);
    }
    // its form still counts
    const malformed = card.issueBillingKey({
      idempotencyKey: key('issue'),
      card: testCard({ number: '4111111111111111', expireMonth: '13' }),
      orderName: 'x',
      subscriptionId: key('sub'),
    });
    expect((await declined(malformed)).pgErrorCode).toBe('C105');
  });
});
