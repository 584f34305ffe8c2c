// The sandbox PGs keep their state across a restart (close, then a new server on the same state folder, as
// `npm start` does with DATA_DIR/sandbox-state): a charge whose answer was lost is not executed again by the
// retry after the restart, an OTP sent before it confirms after it and the inbox still shows it, escrow
// orders, revocations and armed faults survive; the journal holds nothing readable.
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/platform/config/index.js';
import { EscrowStatus } from '../../src/escrow/rules.js';
import { createGatewayRegistry, type ClosableGatewayRegistry } from '../../src/gateways/registry.js';
import { fetchSandboxSms } from '../../src/gateways/sandbox-inbox.js';
import { GatewayDeclinedError, GatewayUnavailableError, type Gateway } from '../../src/gateways/types.js';
import { startSandboxGateways, type SandboxGateways } from '../../src/sandbox/server.js';
import { JOURNAL_FILE } from '../../src/sandbox/state-journal.js';
import { createLogger } from '../../src/platform/logger.js';
import { startConfiguredGateways } from '../../src/composition/index.js';
import { testCard } from '../gateways/fixture.js';

const SECRET = 'durable-state-test-secret-0123456789';
const TOKEN = 'durable-state-test-token-0123456789';
const dirs: string[] = [];
let dir: string;
let sandbox: SandboxGateways | undefined;
let registry: ClosableGatewayRegistry | undefined;
let seq = 0;
const unique = (label: string): string => `${label}-${++seq}-${process.pid}`;

async function start(secret = SECRET): Promise<void> {
  sandbox = await startSandboxGateways({ secret, token: TOKEN, stateDir: dir, faultDelayMs: 10_000 });
  registry = createGatewayRegistry({ sandboxUrl: sandbox.url, timeoutMs: 3_000, sandboxToken: TOKEN });
}
async function stop(): Promise<void> {
  await registry?.close();
  await sandbox?.close();
  registry = undefined;
  sandbox = undefined;
}
async function restart(secret = SECRET): Promise<void> {
  await stop();
  await start(secret);
}
const pg = (name: string): Gateway => {
  const gateway = registry?.get(name);
  if (!gateway) throw new Error(`no ${name}`);
  return gateway;
};
// biome-ignore lint/suspicious/noExplicitAny: the inspection answers are read loosely, asserted field by field
async function internal(method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await request(new URL(url, sandbox!.url), {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? null : JSON.stringify(body),
    headersTimeout: 5_000,
    bodyTimeout: 5_000,
  });
  return { status: res.statusCode, body: await res.body.json() };
}
async function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (err: unknown) => err,
  );
}

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'paygate-sandbox-state-'));
  dirs.push(dir);
  await start();
});
afterEach(stop);
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function chargeRequest() {
  const issued = await pg('sandbox_card').card!.issueBillingKey({
    idempotencyKey: unique('iss'),
    card: testCard(),
    orderName: 'durable',
    subscriptionId: unique('sub'),
    merchantId: 'app_durable',
  });
  return {
    idempotencyKey: unique('chg'),
    gatewayBillingKey: issued.gatewayBillingKey,
    amount: 12_000,
    taxFree: 0,
    orderId: unique('order'),
    orderName: 'durable',
    quota: 0,
  };
}

describe('a restart of the sandbox', () => {
  it('a charge executed before it, whose answer was lost, is replayed by the retry after it (one execution, same tid)', async () => {
    const req = await chargeRequest();
    expect((await internal('POST', '/_sandbox/faults', { operation: 'charge', fault: 'lost_response' })).status).toBe(200);
    expect(await failure(pg('sandbox_card').card!.charge(req))).toBeInstanceOf(GatewayUnavailableError);
    const before = (await internal('GET', `/_sandbox/charges?idempotency_key=${req.idempotencyKey}`)).body;
    expect(before.executions).toBe(1);

    await restart();
    const retried = await pg('sandbox_card').card!.charge(req);
    expect(retried.gatewayTid).toBe(before.tid);
    expect((await internal('GET', `/_sandbox/charges?idempotency_key=${req.idempotencyKey}`)).body).toEqual({
      idempotency_key: req.idempotencyKey,
      executions: 1,
      tid: before.tid,
    });

    // the charge itself survived too: it can be cancelled, and the cancel's key replays across a restart
    const cancel = { idempotencyKey: unique('cxl'), gatewayTid: retried.gatewayTid, amount: 2_000, taxFree: 0, reason: 'r' };
    const cancelled = await pg('sandbox_card').card!.cancel(cancel);
    await restart();
    expect(await pg('sandbox_card').card!.cancel(cancel)).toEqual(cancelled);
    expect((await internal('GET', `/_sandbox/charges/${retried.gatewayTid}`)).body).toMatchObject({
      amount: 12_000,
      cancelled_amount: 2_000,
      cancel_count: 1,
    });
  });

  it('keeps revocations: a key revoked before it is refused after it', async () => {
    const req = await chargeRequest();
    await pg('sandbox_card').card!.destroyBillingKey({ gatewayBillingKey: req.gatewayBillingKey });
    await restart();
    const err = await failure(pg('sandbox_card').card!.charge(req));
    expect(err).toBeInstanceOf(GatewayDeclinedError);
    expect((err as GatewayDeclinedError).pgErrorCode).toBe('C202');
  });

  it('an OTP sent before it confirms after it, and the inbox still shows it', async () => {
    const phone = '01055501234';
    const { tid } = await pg('sandbox_identity').identity!.requestOtp({
      idempotencyKey: unique('otp'),
      merchantId: 'app_durable',
      person: { name: 'Hong Gildong', phone: phone, identityNo: '9001011', carrier: 'SKT' },
      type: 'sms',
      clientIp: '127.0.0.1',
    });
    const sent = (await internal('GET', `/_sandbox/sms?phone=${phone}`)).body.list;
    expect(sent).toHaveLength(1);

    await restart();
    const inbox = (await internal('GET', `/_sandbox/sms?phone=${phone}`)).body.list;
    expect(inbox).toEqual(sent);
    expect(inbox[0].tid).toBe(tid);
    // a wrong attempt before a restart still counts after it: the session is the same one
    const wrong = await failure(
      pg('sandbox_identity').identity!.confirmOtp({ tid, otp: inbox[0].otp === '000000' ? '111111' : '000000' }),
    );
    expect((wrong as GatewayDeclinedError).pgErrorCode).toBe('A202');
    await restart();
    const person = await pg('sandbox_identity').identity!.confirmOtp({ tid, otp: inbox[0].otp });
    expect(person.phone).toBe(phone);
  });

  it('an escrow order and what its PG received survive it', async () => {
    const paid = await pg('sandbox_escrow_a').payments!.pay({
      idempotencyKey: unique('pay'),
      amount: 30_000,
      taxFree: 0,
      orderId: unique('order'),
      orderName: 'escrow',
      escrow: true,
      merchantRef: unique('rcpt'),
      merchantId: 'app_durable',
    });
    await restart();
    expect(await pg('sandbox_escrow_a').escrow!.orderStatus({ gatewayTid: paid.gatewayTid })).toBe(EscrowStatus.Waiting);
    const shipped = await request(new URL('/escrow-a/v1/shipments', sandbox!.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': unique('ship') },
      body: JSON.stringify({
        tid: paid.gatewayTid,
        invoice_no: 'T-1',
        dlv_company_code: '04',
        dlv_company_name: 'CJ',
        prepay: 'SH',
        dlv_day: 3,
        rcv_name: 'R',
        rcv_tel: '010',
        rcv_addr: 'Seoul',
        rcv_zip: '04524',
        snd_name: 'S',
        snd_tel: '02',
        snd_zip: '04524',
        snd_addr1: 'Seoul',
        snd_addr2: '1',
      }),
    });
    expect(((await shipped.body.json()) as { res_cd: string }).res_cd).toBe('0000');
    await restart();
    const event = await internal('POST', '/_sandbox/escrow/events', { tid: paid.gatewayTid, event: 'purchase_confirmed' });
    expect(event.status).toBe(202);
    await restart();
    expect(await pg('sandbox_escrow_a').escrow!.orderStatus({ gatewayTid: paid.gatewayTid })).toBe(
      EscrowStatus.PurchaseConfirmed,
    );
    const received = (await internal('GET', `/_sandbox/pg-requests?tid=${paid.gatewayTid}`)).body.list;
    expect(received.map((r: { operation: string }) => r.operation)).toEqual([
      'escrow.status',
      'escrow.ship',
      'escrow.status',
      'payment',
    ]);
  });

  it('keeps armed faults with what is left of them', async () => {
    await internal('POST', '/_sandbox/faults', { operation: 'otp.confirm', fault: '500', count: 3, merchant_id: 'app_x' });
    const req = await chargeRequest();
    await internal('POST', '/_sandbox/faults', { operation: 'charge', fault: '500', count: 2 });
    expect(await failure(pg('sandbox_card').card!.charge(req))).toBeInstanceOf(GatewayUnavailableError);
    await restart();
    const list = (await internal('GET', '/_sandbox/faults')).body.list;
    expect(list.map((f: { operation: string; remaining: number }) => [f.operation, f.remaining])).toEqual([
      ['otp.confirm', 3],
      ['charge', 1],
    ]);
    expect(await failure(pg('sandbox_card').card!.charge(req))).toBeInstanceOf(GatewayUnavailableError);
    expect((await pg('sandbox_card').card!.charge(req)).gatewayTid).toMatch(/^sch_/);
    expect((await internal('DELETE', '/_sandbox/faults')).body.disarmed).toBe(1);
  });

  it('the journal holds nothing readable: no OTP, phone, billing key, CI or masked card', async () => {
    const req = await chargeRequest();
    const charged = await pg('sandbox_card').card!.charge(req);
    const phone = '01055509876';
    const { tid } = await pg('sandbox_identity').identity!.requestOtp({
      idempotencyKey: unique('otp'),
      merchantId: 'app_durable',
      person: { name: 'Kim Cheolsu', phone: phone, identityNo: '9505051', carrier: 'KT' },
      type: 'sms',
      clientIp: '127.0.0.1',
    });
    const otp = (await internal('GET', `/_sandbox/sms?phone=${phone}`)).body.list[0].otp as string;
    const person = await pg('sandbox_identity').identity!.confirmOtp({ tid, otp });
    await restart();
    const journal = await readFile(path.join(dir, JOURNAL_FILE), 'utf8');
    expect(journal.length).toBeGreaterThan(0);
    for (const secretValue of [
      phone,
      req.gatewayBillingKey,
      charged.card.maskedNumber,
      person.ci,
      'Kim Cheolsu',
      charged.gatewayTid,
    ]) {
      expect(journal).not.toContain(secretValue);
    }
    expect(journal).not.toContain(otp);
    expect(journal).toMatch(/^[A-Za-z0-9_\-\n]+$/);
  });

  it('with another secret the journal is set aside (never read, never lost) and the sandbox starts empty', async () => {
    const req = await chargeRequest();
    await pg('sandbox_card').card!.charge(req);
    await restart('another-secret-0123456789abcdef');
    expect((await internal('GET', `/_sandbox/charges?idempotency_key=${req.idempotencyKey}`)).body.executions).toBe(0);
    const files = await readdir(dir);
    expect(files.some((f) => f.startsWith(`${JOURNAL_FILE}.unreadable-`))).toBe(true);
  });

  it('a torn last line (a write a crash cut short) is ignored, the rest replayed', async () => {
    const req = await chargeRequest();
    const first = await pg('sandbox_card').card!.charge(req);
    await stop();
    const { appendFile } = await import('node:fs/promises');
    await appendFile(path.join(dir, JOURNAL_FILE), 'AAAAtorn');
    await start();
    expect((await pg('sandbox_card').card!.charge(req)).gatewayTid).toBe(first.gatewayTid);
  });
});

describe('as npm start and the standalone process run it (DATA_DIR/sandbox-state)', () => {
  const silent = createLogger({ level: 'silent' });
  const ROOT = fileURLToPath(new URL('../..', import.meta.url));

  it('npm start (startConfiguredGateways): an OTP sent before a restart confirms after it', async () => {
    const config = parseConfig({ PAYGATE_SANDBOX: 'true', DATA_DIR: dir });
    let gateways = await startConfiguredGateways(config, silent);
    const phone = '01055504321';
    try {
      const { tid } = await gateways.gateways.get('sandbox_identity')!.identity!.requestOtp({
        idempotencyKey: unique('otp'),
        merchantId: 'app_npm_start',
        person: { name: 'Lee Younghee', phone: phone, identityNo: '0203044', carrier: 'SKT' },
        type: 'sms',
        clientIp: '127.0.0.1',
      });
      await gateways.close();
      gateways = await startConfiguredGateways(config, silent);
      const [sms] = await fetchSandboxSms({ url: gateways.sandboxUrl!, token: gateways.sandboxToken! }, phone);
      expect(sms?.tid).toBe(tid);
      const person = await gateways.gateways.get('sandbox_identity')!.identity!.confirmOtp({ tid, otp: sms!.otp });
      expect(person.name).toBe('Lee Younghee');
    } finally {
      await gateways.close();
    }
  });

  it('the standalone process killed with SIGKILL right after a charge: the retry replays it (one execution)', async () => {
    const env = { DATA_DIR: dir, SANDBOX_TOKEN: TOKEN, SANDBOX_SECRET: SECRET };
    const first = await standalone(ROOT, env);
    let charge: Awaited<ReturnType<typeof chargeRequest>>;
    let tid: string;
    try {
      const reg = createGatewayRegistry({ sandboxUrl: first.url, timeoutMs: 5_000 });
      const issued = await reg.get('sandbox_card')!.card!.issueBillingKey({
        idempotencyKey: unique('iss'),
        card: testCard(),
        orderName: 'kill',
        subscriptionId: unique('sub'),
      });
      charge = { ...(await chargeRequest()), gatewayBillingKey: issued.gatewayBillingKey };
      tid = (await reg.get('sandbox_card')!.card!.charge(charge)).gatewayTid;
      await reg.close();
    } finally {
      first.kill();
    }
    const second = await standalone(ROOT, env);
    try {
      const reg = createGatewayRegistry({ sandboxUrl: second.url, timeoutMs: 5_000 });
      expect((await reg.get('sandbox_card')!.card!.charge(charge)).gatewayTid).toBe(tid);
      await reg.close();
      const res = await fetch(new URL(`/_sandbox/charges?idempotency_key=${charge.idempotencyKey}`, second.url), {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(await res.json()).toEqual({ idempotency_key: charge.idempotencyKey, executions: 1, tid });
    } finally {
      second.kill();
    }
  });
});

/** Runs src/sandbox/main.ts until it logs its address; SIGKILL on timeout and by `kill`. */
async function standalone(root: string, env: Record<string, string>): Promise<{ url: string; kill(): void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/sandbox/main.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', SANDBOX_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => {
    output += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    output += c.toString();
  });
  const kill = () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    const line = output.split('\n').find((l) => l.includes('sandbox gateways listening'));
    if (line) return { url: (JSON.parse(line) as { url: string }).url, kill };
    if (child.exitCode !== null || Date.now() > deadline) {
      kill();
      throw new Error(`standalone sandbox did not start: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
