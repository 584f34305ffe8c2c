// The sandbox identity adapter against the real sandbox server: OTP send / resend / confirm, the
// failing test phones, derived person data, CI/DI and the OTP's 30-minute expiry.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeBirthSex } from '../../src/sandbox/identity-pg.js';
import { fetchSandboxSms } from '../../src/gateways/sandbox-inbox.js';
import type { IdentityPerson } from '../../src/gateways/rules.js';
import { GatewayDeclinedError, GatewayUnavailableError, type OtpRequest } from '../../src/gateways/types.js';
import { startSandboxFixture, type SandboxFixture } from './fixture.js';

let fx: SandboxFixture;
let seq = 0;
const key = (label: string): string => `${label}-${++seq}-${process.pid}`;
/** A fresh phone per test so inbox assertions do not see other tests' messages. */
const phone = (): string => `0109${String(++seq).padStart(7, '0')}`;

beforeAll(async () => {
  fx = await startSandboxFixture();
});
afterAll(async () => {
  await fx.close();
});

/** An OTP request; `overrides` may name the person's fields (name, phone, identityNo, carrier) beside the request's. */
function otpRequest(overrides: Partial<Omit<OtpRequest, 'person'>> & Partial<IdentityPerson> = {}): OtpRequest {
  const { name, phone: to, identityNo, carrier, ...request } = overrides;
  return {
    idempotencyKey: key('otp'),
    merchantId: 'merchant-a',
    person: {
      name: name ?? 'Hong Gildong',
      phone: to ?? phone(),
      identityNo: identityNo ?? '9001011',
      carrier: carrier ?? 'SKT',
    },
    type: 'sms',
    clientIp: '203.0.113.7',
    ...request,
  };
}

async function latestOtp(to: string): Promise<string> {
  const [latest] = await fetchSandboxSms(fx.sandbox, to);
  if (latest === undefined) throw new Error(`no SMS to ${to}`);
  return latest.otp;
}

async function declined(p: Promise<unknown>): Promise<GatewayDeclinedError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GatewayDeclinedError);
  return err as GatewayDeclinedError;
}

describe('sandbox_identity SMS OTP', () => {
  it('sends a 6-digit OTP to the inbox and confirms it', async () => {
    const req = otpRequest({ carrier: 'KT_MVNO' });
    const { tid } = await fx.identity.requestOtp(req);
    const inbox = await fetchSandboxSms(fx.sandbox, req.person.phone);
    expect(inbox).toHaveLength(1);
    const [sms] = inbox;
    expect(sms?.otp).toMatch(/^\d{6}$/);
    expect(sms?.message).toContain(sms?.otp);
    expect(sms?.phone).toBe(req.person.phone);
    expect(sms?.sentAt).toBeInstanceOf(Date);

    const person = await fx.identity.confirmOtp({ tid, otp: sms?.otp ?? '' });
    expect(person).toMatchObject({
      name: 'Hong Gildong',
      phone: req.person.phone,
      birth: '19900101',
      gender: 1,
      foreigner: '0',
      carrier: 'KT_MVNO',
    });
    expect(person.ci).toHaveLength(88);
    expect(person.di).toHaveLength(88);
  });

  it('answers a repeated confirm (a retry) with the same person', async () => {
    const req = otpRequest();
    const { tid } = await fx.identity.requestOtp(req);
    const otp = await latestOtp(req.person.phone);
    const first = await fx.identity.confirmOtp({ tid, otp });
    expect(await fx.identity.confirmOtp({ tid, otp })).toEqual(first);
  });

  it('refuses a wrong OTP, then accepts the right one', async () => {
    const req = otpRequest();
    const { tid } = await fx.identity.requestOtp(req);
    const otp = await latestOtp(req.person.phone);
    const wrong = otp === '000000' ? '111111' : '000000';
    const err = await declined(fx.identity.confirmOtp({ tid, otp: wrong }));
    expect(err.pgErrorCode).toBe('A202');
    await expect(fx.identity.confirmOtp({ tid, otp })).resolves.toMatchObject({ name: req.person.name });
  });

  it('locks the transaction after 5 wrong OTPs', async () => {
    const req = otpRequest();
    const { tid } = await fx.identity.requestOtp(req);
    const otp = await latestOtp(req.person.phone);
    const wrong = otp === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i++) expect((await declined(fx.identity.confirmOtp({ tid, otp: wrong }))).pgErrorCode).toBe('A202');
    expect((await declined(fx.identity.confirmOtp({ tid, otp }))).pgErrorCode).toBe('A204');
  });

  it('refuses an unknown tid', async () => {
    expect((await declined(fx.identity.confirmOtp({ tid: 'sid_nope', otp: '123456' }))).pgErrorCode).toBe('A201');
    expect((await declined(fx.identity.resendOtp({ tid: 'sid_nope', idempotencyKey: key('r') }))).pgErrorCode).toBe('A201');
  });

  it('does not send a second SMS for a repeated idempotency key', async () => {
    const req = otpRequest();
    const a = await fx.identity.requestOtp(req);
    const b = await fx.identity.requestOtp(req);
    expect(b.tid).toBe(a.tid);
    expect(await fetchSandboxSms(fx.sandbox, req.person.phone)).toHaveLength(1);
  });

  it('expires the OTP 30 minutes after sending', async () => {
    const req = otpRequest();
    const { tid } = await fx.identity.requestOtp(req);
    const otp = await latestOtp(req.person.phone);
    fx.advance(30 * 60_000 + 1_000);
    try {
      const err = await declined(fx.identity.confirmOtp({ tid, otp }));
      expect(err.pgErrorCode).toBe('A203');
    } finally {
      fx.advance(-(30 * 60_000 + 1_000));
    }
  });

  it('still accepts the OTP just before 30 minutes', async () => {
    const req = otpRequest();
    const { tid } = await fx.identity.requestOtp(req);
    const otp = await latestOtp(req.person.phone);
    fx.advance(29 * 60_000);
    try {
      await expect(fx.identity.confirmOtp({ tid, otp })).resolves.toMatchObject({ phone: req.person.phone });
    } finally {
      fx.advance(-29 * 60_000);
    }
  });

  it('refuses to send to 01000000000 with a pg error code', async () => {
    const err = await declined(fx.identity.requestOtp(otpRequest({ phone: '01000000000' })));
    expect(err.pgErrorCode).toBe('A101');
    expect(await fetchSandboxSms(fx.sandbox, '01000000000')).toEqual([]);
  });

  it('refuses an impossible birth date', async () => {
    const err = await declined(fx.identity.requestOtp(otpRequest({ identityNo: '9013401' })));
    expect(err.pgErrorCode).toBe('A103');
  });
});

describe('sandbox_identity resend', () => {
  it('sends a new OTP, invalidates the old one and lists the newest first', async () => {
    const req = otpRequest();
    const { tid } = await fx.identity.requestOtp(req);
    const oldOtp = await latestOtp(req.person.phone);
    let newOtp = oldOtp;
    // A resend may draw the same 6 digits by chance; resend until it differs (bounded).
    for (let i = 0; i < 5 && newOtp === oldOtp; i++) {
      await fx.identity.resendOtp({ tid, idempotencyKey: key('resend') });
      newOtp = await latestOtp(req.person.phone);
    }
    expect(newOtp).not.toBe(oldOtp);
    const inbox = await fetchSandboxSms(fx.sandbox, req.person.phone);
    expect(inbox.length).toBeGreaterThanOrEqual(2);
    expect(inbox[0]?.otp).toBe(newOtp);
    expect(inbox.at(-1)?.otp).toBe(oldOtp);
    expect(inbox[0]!.sentAt.getTime()).toBeGreaterThanOrEqual(inbox.at(-1)!.sentAt.getTime());

    expect((await declined(fx.identity.confirmOtp({ tid, otp: oldOtp }))).pgErrorCode).toBe('A202');
    await expect(fx.identity.confirmOtp({ tid, otp: newOtp })).resolves.toMatchObject({ name: req.person.name });
  });

  it('replays a resend with the same idempotency key without a new SMS', async () => {
    const req = otpRequest();
    const { tid } = await fx.identity.requestOtp(req);
    const resend = { tid, idempotencyKey: key('resend') };
    await fx.identity.resendOtp(resend);
    await fx.identity.resendOtp(resend);
    expect(await fetchSandboxSms(fx.sandbox, req.person.phone)).toHaveLength(2);
  });

  it('fails every resend to 01000000001 while the first SMS goes out', async () => {
    const req = otpRequest({ phone: '01000000001' });
    const { tid } = await fx.identity.requestOtp(req);
    const otp = await latestOtp(req.person.phone);
    for (let i = 0; i < 2; i++) {
      const err = await declined(fx.identity.resendOtp({ tid, idempotencyKey: key('resend') }));
      expect(err.pgErrorCode).toBe('A102');
    }
    await expect(fx.identity.confirmOtp({ tid, otp })).resolves.toMatchObject({ phone: '01000000001' });
  });

  it('refuses a resend after confirmation', async () => {
    const req = otpRequest();
    const { tid } = await fx.identity.requestOtp(req);
    await fx.identity.confirmOtp({ tid, otp: await latestOtp(req.person.phone) });
    expect((await declined(fx.identity.resendOtp({ tid, idempotencyKey: key('resend') }))).pgErrorCode).toBe('A205');
  });
});

describe('sandbox_identity pass push', () => {
  it('needs no OTP: the sandbox approves the push, confirm with an empty otp succeeds', async () => {
    const req = otpRequest({ type: 'pass', carrier: 'LGT' });
    const { tid } = await fx.identity.requestOtp(req);
    expect(await fetchSandboxSms(fx.sandbox, req.person.phone)).toEqual([]);
    await expect(fx.identity.confirmOtp({ tid, otp: '' })).resolves.toMatchObject({ carrier: 'LGT', name: req.person.name });
  });

  it('fails the push to 01000000000', async () => {
    const err = await declined(fx.identity.requestOtp(otpRequest({ type: 'pass', phone: '01000000000' })));
    expect(err.pgErrorCode).toBe('A101');
  });
});

describe('verified person data', () => {
  async function verify(overrides: Parameters<typeof otpRequest>[0]) {
    const req = otpRequest(overrides);
    const { tid } = await fx.identity.requestOtp(req);
    return fx.identity.confirmOtp({ tid, otp: await latestOtp(req.person.phone) });
  }

  it('derives birth century, gender and foreigner from the 7th digit', async () => {
    const cases: [string, string, 0 | 1, '0' | '1'][] = [
      ['9001011', '19900101', 1, '0'],
      ['9001012', '19900101', 0, '0'],
      ['0502283', '20050228', 1, '0'],
      ['0502284', '20050228', 0, '0'],
      ['8512315', '19851231', 1, '1'],
      ['8512316', '19851231', 0, '1'],
      ['1007047', '20100704', 1, '1'],
      ['1007048', '20100704', 0, '1'],
      ['9903039', '18990303', 1, '0'],
      ['9903030', '18990303', 0, '0'],
    ];
    for (const [identityNo, birth, gender, foreigner] of cases) {
      expect(await verify({ identityNo }), identityNo).toMatchObject({ birth, gender, foreigner });
    }
  });

  it('gives one person the same CI across merchants and a different DI per merchant', async () => {
    const person = { name: 'Kim Minji', identityNo: '9505052' };
    const a1 = await verify({ ...person, merchantId: 'merchant-a' });
    const a2 = await verify({ ...person, merchantId: 'merchant-a', carrier: 'KT' });
    const b = await verify({ ...person, merchantId: 'merchant-b' });
    expect(b.ci).toBe(a1.ci);
    expect(a2.ci).toBe(a1.ci);
    expect(a2.di).toBe(a1.di);
    expect(b.di).not.toBe(a1.di);
    expect(a1.ci).toMatch(/^[A-Za-z0-9+/]{86}==$/);

    const other = await verify({ ...person, name: 'Kim Minjun' });
    expect(other.ci).not.toBe(a1.ci);
    const otherBirth = await verify({ ...person, identityNo: '9505062' });
    expect(otherBirth.ci).not.toBe(a1.ci);
  });

  it('rejects malformed birth/sex strings in the pure decoder', () => {
    expect(decodeBirthSex('900101')).toBeUndefined();
    expect(decodeBirthSex('90010a1')).toBeUndefined();
    expect(decodeBirthSex('9002301')).toBeUndefined();
    expect(decodeBirthSex('0002293')).toEqual({ birth: '20000229', sex: 'M', foreigner: '0' });
    expect(decodeBirthSex('0002291')).toBeUndefined();
  });
});

describe('SMS inbox client', () => {
  it('returns an empty list for a phone without messages', async () => {
    expect(await fetchSandboxSms(fx.sandbox, phone())).toEqual([]);
  });

  it('maps an unreachable sandbox to GatewayUnavailableError', async () => {
    const err = await fetchSandboxSms({ url: 'http://127.0.0.1:1', token: 'unused-token' }, '01012345678').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GatewayUnavailableError);
  });
});
