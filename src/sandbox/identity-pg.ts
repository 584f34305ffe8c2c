// The sandbox identity PG's behaviour, independent of HTTP: SMS OTP / pass push, resend, confirm,
// the derived person data (birth, gender, foreigner, CI, DI) and the SMS inbox (journaled, state-journal.ts).
import { createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { BoundedMap } from './bounded-map.js';
import { approved, refused, type PgOutcome } from './outcome.js';
import type { JournalRecord, JournalSink } from './state-journal.js';

/** Phones with fixed behaviour. */
export const SANDBOX_PHONES = {
  /** the first SMS / push cannot be delivered */
  sendFails: '01000000000',
  /** the first SMS goes out, every resend fails */
  resendFails: '01000000001',
} as const;

export const OTP_TTL_MS = 30 * 60_000;
const MAX_WRONG_ATTEMPTS = 5;

export interface InboxMessage {
  readonly phone: string;
  /** the verification transaction the message belongs to: paygate shows a project only its own */
  readonly tid: string;
  readonly message: string;
  readonly otp: string;
  readonly sentAt: Date;
}

interface Session {
  readonly tid: string;
  readonly merchantId: string;
  readonly name: string;
  readonly phone: string;
  readonly birth: string;
  readonly sex: 'M' | 'F';
  readonly foreigner: '0' | '1';
  readonly telco: string;
  readonly method: 'SMS' | 'PASS';
  /** HMAC of the current OTP; undefined for pass pushes */
  otpDigest: Buffer | undefined;
  expiresAt: number;
  wrongAttempts: number;
  confirmed: boolean;
}

export interface ConfirmedPersonWire {
  readonly user_name: string;
  readonly phone_no: string;
  readonly birthday: string;
  readonly sex: 'M' | 'F';
  readonly foreigner: '0' | '1';
  readonly telco: string;
  readonly ci: string;
  readonly di: string;
}

/**
 * Birth date, sex and foreigner flag from YYMMDD + the first digit of the resident number's back
 * part: that digit encodes century (1/2/5/6 → 19xx, 3/4/7/8 → 20xx, 9/0 → 18xx), sex (odd male)
 * and nationality (5-8 foreign).
 */
export function decodeBirthSex(birthSex: string): { birth: string; sex: 'M' | 'F'; foreigner: '0' | '1' } | undefined {
  if (!/^\d{7}$/.test(birthSex)) return undefined;
  const digit = Number(birthSex[6]);
  const century = [1, 2, 5, 6].includes(digit) ? '19' : [3, 4, 7, 8].includes(digit) ? '20' : '18';
  const birth = `${century}${birthSex.slice(0, 6)}`;
  const year = Number(birth.slice(0, 4));
  const month = Number(birth.slice(4, 6));
  const day = Number(birth.slice(6, 8));
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined;
  return { birth, sex: digit % 2 === 1 ? 'M' : 'F', foreigner: digit >= 5 && digit <= 8 ? '1' : '0' };
}

export interface IdentityPgStats {
  otpRequests: number;
  smsSent: number;
  pushesSent: number;
  confirmations: number;
  wrongOtps: number;
}

export class SandboxIdentityPg {
  private readonly sessions = new BoundedMap<string, Session>(50_000);
  private readonly inbox: InboxMessage[] = [];
  private static readonly INBOX_CAPACITY = 10_000;
  readonly stats: IdentityPgStats = { otpRequests: 0, smsSent: 0, pushesSent: 0, confirmations: 0, wrongOtps: 0 };

  constructor(
    private readonly secret: string,
    private readonly clock: () => Date,
    /** where sessions and the inbox are kept across restarts */
    private readonly journal: JournalSink = { write: () => undefined },
  ) {}

  requestOtp(req: {
    merchant_id: string;
    user_name: string;
    phone_no: string;
    birth_sex: string;
    telco: string;
    method: 'SMS' | 'PASS';
  }): PgOutcome<{ tid: string }> {
    const person = decodeBirthSex(req.birth_sex);
    if (person === undefined) return refused('A103', 'invalid birth date or resident number digit');
    if (req.phone_no === SANDBOX_PHONES.sendFails) {
      return refused('A101', req.method === 'PASS' ? 'pass push delivery failed' : 'SMS delivery failed');
    }
    this.stats.otpRequests++;
    const session: Session = {
      tid: `sid_${randomBytes(12).toString('hex')}`,
      merchantId: req.merchant_id,
      name: req.user_name,
      phone: req.phone_no,
      ...person,
      telco: req.telco,
      method: req.method,
      otpDigest: undefined,
      expiresAt: 0,
      wrongAttempts: 0,
      confirmed: false,
    };
    this.deliver(session);
    this.sessions.set(session.tid, session);
    this.keep(session);
    return approved({ tid: session.tid });
  }

  resendOtp(req: { tid: string }): PgOutcome<Record<string, never>> {
    const session = this.sessions.get(req.tid);
    if (session === undefined) return refused('A201', 'unknown transaction');
    if (session.confirmed) return refused('A205', 'already confirmed');
    if (session.phone === SANDBOX_PHONES.resendFails) return refused('A102', 'SMS resend failed');
    this.deliver(session);
    this.keep(session);
    return approved({});
  }

  confirmOtp(req: { tid: string; otp: string }): PgOutcome<ConfirmedPersonWire> {
    const session = this.sessions.get(req.tid);
    if (session === undefined) return refused('A201', 'unknown transaction');
    if (session.wrongAttempts >= MAX_WRONG_ATTEMPTS) return refused('A204', 'too many wrong OTP attempts');
    if (this.clock().getTime() > session.expiresAt) return refused('A203', 'OTP expired');
    // A pass push is approved by the user in the app; the sandbox approves every push at once.
    if (session.method === 'SMS') {
      const digest = session.otpDigest;
      const given = this.otpDigest(session.tid, req.otp);
      if (digest === undefined || !timingSafeEqual(digest, given)) {
        session.wrongAttempts++;
        this.keep(session);
        this.stats.wrongOtps++;
        return refused('A202', 'OTP mismatch');
      }
    }
    // A repeated confirm (a retry after a lost response) answers the same person again.
    if (!session.confirmed) {
      session.confirmed = true;
      this.keep(session);
      this.stats.confirmations++;
    }
    const ci = this.ci(session);
    return approved({
      user_name: session.name,
      phone_no: session.phone,
      birthday: session.birth,
      sex: session.sex,
      foreigner: session.foreigner,
      telco: session.telco,
      ci,
      di: this.di(ci, session.merchantId),
    });
  }

  /** Messages to `phone`, newest first. */
  inboxFor(phone: string): InboxMessage[] {
    return this.inbox.filter((m) => m.phone === phone).reverse();
  }

  private deliver(session: Session): void {
    const now = this.clock();
    session.expiresAt = now.getTime() + OTP_TTL_MS;
    if (session.method === 'PASS') {
      session.otpDigest = undefined;
      this.stats.pushesSent++;
      return;
    }
    const otp = String(randomInt(0, 1_000_000)).padStart(6, '0');
    session.otpDigest = this.otpDigest(session.tid, otp);
    const sms: InboxMessage = {
      phone: session.phone,
      tid: session.tid,
      message: `[paygate sandbox] Your verification code is ${otp}. It expires in 30 minutes.`,
      otp,
      sentAt: now,
    };
    this.receiveSms(sms);
    this.journal.write({ k: 'identity.sms', ...sms, sentAt: now.toISOString() });
    this.stats.smsSent++;
  }

  private receiveSms(sms: InboxMessage): void {
    this.inbox.push(sms);
    if (this.inbox.length > SandboxIdentityPg.INBOX_CAPACITY) this.inbox.shift();
  }

  /** The session as it is now: the OTP only as its HMAC digest, like in memory. */
  private keep(session: Session): void {
    this.journal.write({ k: 'identity.session', ...session, otpDigest: session.otpDigest?.toString('base64') });
  }

  /** The merchant a verification transaction belongs to. */
  sessionMerchant(tid: string): string | undefined {
    return this.sessions.get(tid)?.merchantId;
  }

  /** Replays one journaled fact (see state-journal.ts); other kinds are not this PG's. */
  restore(record: JournalRecord): void {
    if (record.k === 'identity.session') {
      const { k: _k, otpDigest, ...session } = record as JournalRecord & Omit<Session, 'otpDigest'> & { otpDigest?: string };
      this.sessions.set(session.tid, {
        ...session,
        otpDigest: typeof otpDigest === 'string' ? Buffer.from(otpDigest, 'base64') : undefined,
      });
    } else if (record.k === 'identity.sms') {
      const { k: _k, sentAt, ...sms } = record as JournalRecord & Omit<InboxMessage, 'sentAt'> & { sentAt: string };
      this.receiveSms({ ...sms, sentAt: new Date(sentAt) });
    }
  }

  *snapshot(): Iterable<JournalRecord> {
    for (const session of this.sessions.values()) {
      yield { k: 'identity.session', ...session, otpDigest: session.otpDigest?.toString('base64') };
    }
    for (const sms of this.inbox) yield { k: 'identity.sms', ...sms, sentAt: sms.sentAt.toISOString() };
  }

  private otpDigest(tid: string, otp: string): Buffer {
    return createHmac('sha256', this.secret).update(`otp|${tid}|${otp}`).digest();
  }

  /** One person (same name, birth date, sex) has one CI, whatever the merchant. 88 base64 characters. */
  private ci(session: Session): string {
    return createHmac('sha512', this.secret).update(`ci|${session.name}|${session.birth}|${session.sex}`).digest('base64');
  }

  /** DI: the person's CI scoped to one merchant. */
  private di(ci: string, merchantId: string): string {
    return createHmac('sha512', this.secret).update(`di|${ci}|${merchantId}`).digest('base64');
  }
}
