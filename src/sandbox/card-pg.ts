// The sandbox card PG's behaviour, independent of HTTP: billing key issuance from raw card data,
// charges against stateless signed keys, full/partial cancels, key revocation.
import { randomBytes, randomInt } from 'node:crypto';
import { isLuhnValid, maskCardNumber } from '../gateways/card-rules.js';
import { decodeBillingKey, encodeBillingKey } from './billing-key-token.js';
import { BoundedMap } from './bounded-map.js';
import { approved, refused, type PgOutcome } from './outcome.js';
import type { JournalRecord, JournalSink } from './state-journal.js';

/** Test cards with fixed behaviour. */
export const SANDBOX_CARDS = {
  /** issuance is refused */
  refuseIssuance: '4000000000000002',
  /** issuance succeeds, every charge with its key is refused */
  refuseCharges: '4000000000009995',
  /**
   * the README's and the docs' card: its expiry is checked for form only, never against the sandbox clock, so a tour
   * that moved the clock years ahead (schedules, dunning) leaves the documented values valid. Any other card expires
   * as a card does: at the end of its month, in sandbox time.
   */
  evergreen: '4111111111111111',
} as const;

/** Card company by leading digits; the longest matching prefix wins. */
const ISSUERS: readonly { prefix: string; name: string; code: string; kind: 'CREDIT' | 'CHECK' }[] = [
  { prefix: '4', name: 'Sandbox VISA', code: 'SVS', kind: 'CREDIT' },
  { prefix: '5', name: 'Sandbox Master', code: 'SMC', kind: 'CREDIT' },
  { prefix: '3', name: 'Sandbox AMEX', code: 'SAX', kind: 'CREDIT' },
  { prefix: '9', name: 'Sandbox Domestic', code: 'SDM', kind: 'CREDIT' },
  { prefix: '94', name: 'Sandbox Domestic Check', code: 'SDC', kind: 'CHECK' },
];
const OTHER_ISSUER = { prefix: '', name: 'Sandbox Card', code: 'SOT', kind: 'CREDIT' } as const;

export function issuerFor(cardNo: string): { name: string; code: string; kind: 'CREDIT' | 'CHECK' } {
  let best: (typeof ISSUERS)[number] | typeof OTHER_ISSUER = OTHER_ISSUER;
  for (const issuer of ISSUERS) {
    if (cardNo.startsWith(issuer.prefix) && issuer.prefix.length > best.prefix.length) best = issuer;
  }
  return best;
}

function issuerName(code: string): string {
  return ISSUERS.find((i) => i.code === code)?.name ?? OTHER_ISSUER.name;
}

const MAX_INSTALLMENT_MONTHS = 36;
const newId = (prefix: string): string => `${prefix}${randomBytes(12).toString('hex')}`;

export interface WireCard {
  readonly masked_no: string;
  readonly issuer_name: string;
  readonly issuer_code: string;
  readonly kind: 'CREDIT' | 'CHECK';
}

interface ChargeRecord {
  readonly tid: string;
  /** who made it, when known (a merchant's faults follow its charges' cancels) */
  readonly merchant?: string | undefined;
  readonly pg?: string | undefined;
  readonly amount: number;
  readonly taxFree: number;
  cancelledAmount: number;
  cancelledTaxFree: number;
  cancelCount: number;
}

export interface CardPgStats {
  billingKeysIssued: number;
  billingKeysRevoked: number;
  chargesApproved: number;
  cancelsApproved: number;
}

export class SandboxCardPg {
  private readonly revokedKeyIds = new BoundedMap<string, true>(100_000);
  private readonly chargesByTid = new BoundedMap<string, ChargeRecord>(100_000);
  readonly stats: CardPgStats = { billingKeysIssued: 0, billingKeysRevoked: 0, chargesApproved: 0, cancelsApproved: 0 };

  constructor(
    private readonly secret: string,
    private readonly clock: () => Date,
    /** where revocations and charges are kept across restarts */
    private readonly journal: JournalSink = { write: () => undefined },
  ) {}

  issueBillingKey(req: {
    merchant_id?: string | undefined;
    card_no: string;
    card_pw2: string;
    buyer_auth_no: string;
    exp_yy: string;
    exp_mm: string;
  }): PgOutcome<{ bkey: string; tid: string; card: WireCard; bkey_expires_at: string; issued_at: string }> {
    if (!/^\d{15,16}$/.test(req.card_no) || !isLuhnValid(req.card_no)) {
      return refused('C101', 'invalid card number');
    }
    if (req.card_pw2.trim() === '' || req.buyer_auth_no.trim() === '') {
      return refused('C104', 'card password or owner identity missing');
    }
    const month = Number(req.exp_mm);
    if (!/^\d{2}$/.test(req.exp_yy) || !/^\d{2}$/.test(req.exp_mm) || month < 1 || month > 12) {
      return refused('C105', 'invalid expiry');
    }
    const now = this.clock();
    // Valid through the last second of the expiry month in Korea Standard Time (UTC+9, no DST),
    // the card issuers' time zone: 12/30 -> 2030-12-31T23:59:59+09:00.
    const KST_OFFSET_MS = 9 * 60 * 60 * 1000;
    const expiresAt = new Date(Date.UTC(2000 + Number(req.exp_yy), month, 1) - KST_OFFSET_MS - 1000);
    const evergreen = req.card_no === SANDBOX_CARDS.evergreen;
    if (!evergreen && expiresAt.getTime() < now.getTime()) return refused('C102', 'card expired');
    if (req.card_no === SANDBOX_CARDS.refuseIssuance) return refused('C103', 'issuer refused billing key issuance');

    const issuer = issuerFor(req.card_no);
    const masked = maskCardNumber(req.card_no);
    const bkey = encodeBillingKey(this.secret, {
      kid: randomBytes(9).toString('base64url'),
      masked,
      issuer: issuer.code,
      kind: issuer.kind,
      refuse: req.card_no === SANDBOX_CARDS.refuseCharges,
      exp: expiresAt.getTime(),
      ...(evergreen ? { evergreen } : {}),
      iat: now.getTime(),
      ...(req.merchant_id === undefined ? {} : { mid: req.merchant_id }),
    });
    this.stats.billingKeysIssued++;
    return approved({
      bkey,
      tid: newId('sbt_'),
      card: { masked_no: masked, issuer_name: issuer.name, issuer_code: issuer.code, kind: issuer.kind },
      bkey_expires_at: expiresAt.toISOString(),
      issued_at: now.toISOString(),
    });
  }

  charge(req: {
    bkey: string;
    amount: number;
    tax_free: number;
    installment: number;
  }): PgOutcome<{ tid: string; approval_no: string; approved_at: string; card: WireCard; installment: number }> {
    const claims = decodeBillingKey(this.secret, req.bkey);
    if (claims === undefined) return refused('C201', 'invalid billing key');
    if (this.revokedKeyIds.has(claims.kid)) return refused('C202', 'billing key revoked');
    const now = this.clock();
    if (claims.evergreen !== true && claims.exp < now.getTime()) return refused('C203', 'billing key expired');
    if (req.amount < 1 || req.tax_free < 0 || req.tax_free > req.amount) return refused('C205', 'invalid amount');
    if (req.installment < 0 || req.installment > MAX_INSTALLMENT_MONTHS) {
      return refused('C207', 'invalid installment months');
    }
    // 0 and 1 both mean a lump sum.
    if (req.installment >= 2 && claims.kind === 'CHECK') return refused('C206', 'check cards cannot pay in installments');
    if (claims.refuse) return refused('C204', 'charge refused by issuer');

    const tid = newId('sch_');
    this.keepCharge({
      tid,
      merchant: claims.mid,
      pg: 'sandbox_card',
      amount: req.amount,
      taxFree: req.tax_free,
      cancelledAmount: 0,
      cancelledTaxFree: 0,
      cancelCount: 0,
    });
    this.stats.chargesApproved++;
    return approved({
      tid,
      approval_no: String(randomInt(0, 100_000_000)).padStart(8, '0'),
      approved_at: now.toISOString(),
      card: { masked_no: claims.masked, issuer_name: issuerName(claims.issuer), issuer_code: claims.issuer, kind: claims.kind },
      installment: req.installment,
    });
  }

  cancel(req: {
    tid: string;
    amount: number;
    tax_free: number;
  }): PgOutcome<{ cancel_tid: string; cancelled_at: string; remaining_amount: number }> {
    const charge = this.chargesByTid.get(req.tid);
    if (charge === undefined) return refused('C301', 'unknown transaction');
    if (req.amount < 1 || req.tax_free < 0 || req.tax_free > req.amount) return refused('C205', 'invalid amount');
    const remaining = charge.amount - charge.cancelledAmount;
    if (req.amount > remaining) return refused('C302', 'cancel amount exceeds the remaining amount');
    const remainingTaxFree = charge.taxFree - charge.cancelledTaxFree;
    const remainingTaxable = remaining - remainingTaxFree;
    if (req.tax_free > remainingTaxFree || req.amount - req.tax_free > remainingTaxable) {
      return refused('C303', 'cancel amount exceeds the remaining tax-free or taxable amount');
    }
    charge.cancelledAmount += req.amount;
    charge.cancelledTaxFree += req.tax_free;
    charge.cancelCount++;
    this.journal.write({ k: 'card.charge', ...charge });
    this.stats.cancelsApproved++;
    return approved({
      cancel_tid: newId('scc_'),
      cancelled_at: this.clock().toISOString(),
      remaining_amount: charge.amount - charge.cancelledAmount,
    });
  }

  /** A one-off payment (the sandbox's payment window): a charge its cancels refund like any other. */
  pay(req: {
    pg: string;
    merchant_id?: string | undefined;
    amount: number;
    tax_free: number;
  }): PgOutcome<{ tid: string; approval_no: string; approved_at: string; card: WireCard }> {
    if (req.amount < 1 || req.tax_free < 0 || req.tax_free > req.amount) return refused('C205', 'invalid amount');
    const tid = newId('spy_');
    this.keepCharge({
      tid,
      merchant: req.merchant_id,
      pg: req.pg,
      amount: req.amount,
      taxFree: req.tax_free,
      cancelledAmount: 0,
      cancelledTaxFree: 0,
      cancelCount: 0,
    });
    this.stats.chargesApproved++;
    const issuer = issuerFor('4');
    return approved({
      tid,
      approval_no: String(randomInt(0, 100_000_000)).padStart(8, '0'),
      approved_at: this.clock().toISOString(),
      card: { masked_no: '4000-00**-****-0000', issuer_name: issuer.name, issuer_code: issuer.code, kind: issuer.kind },
    });
  }

  revokeBillingKey(req: { bkey: string }): PgOutcome<Record<string, never>> {
    const claims = decodeBillingKey(this.secret, req.bkey);
    if (claims === undefined) return refused('C201', 'invalid billing key');
    // Revoking twice is not an error: destroy must be safe to retry.
    if (!this.revokedKeyIds.has(claims.kid)) {
      this.revokedKeyIds.set(claims.kid, true);
      this.journal.write({ k: 'card.revoked', kid: claims.kid });
      this.stats.billingKeysRevoked++;
    }
    return approved({});
  }

  /** Inspection for tests: the state of one charge. */
  chargeState(tid: string): Readonly<ChargeRecord> | undefined {
    return this.chargesByTid.get(tid);
  }

  /** The merchant of a billing key (undefined for keys issued without one, or not this sandbox's). */
  billingKeyMerchant(bkey: string): string | undefined {
    return decodeBillingKey(this.secret, bkey)?.mid;
  }

  private keepCharge(charge: ChargeRecord): void {
    this.chargesByTid.set(charge.tid, charge);
    this.journal.write({ k: 'card.charge', ...charge });
  }

  /** Replays one journaled fact (see state-journal.ts); other kinds are not this PG's. */
  restore(record: JournalRecord): void {
    if (record.k === 'card.revoked') this.revokedKeyIds.set(String(record.kid), true);
    else if (record.k === 'card.charge') {
      const { k: _k, ...charge } = record as JournalRecord & ChargeRecord;
      this.chargesByTid.set(charge.tid, charge);
    }
  }

  *snapshot(): Iterable<JournalRecord> {
    for (const [kid] of this.revokedKeyIds.pairs()) yield { k: 'card.revoked', kid };
    for (const charge of this.chargesByTid.values()) yield { k: 'card.charge', ...charge };
  }
}
