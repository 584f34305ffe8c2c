// Transport failures map to GatewayUnavailableError, and a retry with the same idempotency key
// after a timeout charges exactly once (proved by the sandbox's inspection endpoint).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayRegistry } from '../../src/gateways/registry.js';
import {
  GatewayDeclinedError,
  GatewayKeyReusedError,
  GatewayUnavailableError,
  type ChargeRequest,
} from '../../src/gateways/types.js';
import { startSandboxFixture, testCard, type SandboxFixture } from './fixture.js';

let fx: SandboxFixture;
let seq = 0;
const key = (label: string): string => `${label}-${++seq}-${process.pid}`;

beforeAll(async () => {
  // A short adapter timeout against answers the sandbox holds for 10 s.
  fx = await startSandboxFixture({ timeoutMs: 300, faultDelayMs: 10_000 });
});
afterAll(async () => {
  await fx.close();
});

async function arm(operation: string, fault: string, count = 1): Promise<void> {
  const res = await fx.postJson('/_sandbox/faults', { operation, fault, count });
  expect(res.status).toBe(200);
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
}

async function chargeRequest(): Promise<ChargeRequest> {
  const issued = await fx.card.issueBillingKey({
    idempotencyKey: key('issue'),
    card: testCard(),
    orderName: 'x',
    subscriptionId: key('sub'),
  });
  return {
    idempotencyKey: key('charge'),
    gatewayBillingKey: issued.gatewayBillingKey,
    amount: 7_000,
    taxFree: 0,
    orderId: key('order'),
    orderName: 'x',
    quota: 0,
  };
}

async function executions(idempotencyKey: string): Promise<{ executions: number; tid: string | null }> {
  const res = await fx.getJson(`/_sandbox/charges?idempotency_key=${encodeURIComponent(idempotencyKey)}`);
  expect(res.status).toBe(200);
  return res.body as { executions: number; tid: string | null };
}

describe('idempotent charges', () => {
  it('a retry after a timeout returns the first charge and charges once', async () => {
    const req = await chargeRequest();
    await arm('charge', 'timeout');
    const err = await rejection(fx.card.charge(req));
    expect(err).toBeInstanceOf(GatewayUnavailableError);
    expect((err as Error).message).toMatch(/timeout/);

    const retried = await fx.card.charge(req);
    const again = await fx.card.charge(req);
    expect(again).toEqual(retried);
    expect(await executions(req.idempotencyKey)).toEqual({
      idempotency_key: req.idempotencyKey,
      executions: 1,
      tid: retried.gatewayTid,
    });
  });

  it('a retry after a garbage answer also charges once', async () => {
    const req = await chargeRequest();
    await arm('charge', 'garbage');
    expect(await rejection(fx.card.charge(req))).toBeInstanceOf(GatewayUnavailableError);
    const retried = await fx.card.charge(req);
    expect((await executions(req.idempotencyKey)).executions).toBe(1);
    expect((await executions(req.idempotencyKey)).tid).toBe(retried.gatewayTid);
  });

  it('a 500 does nothing: the retry performs the charge', async () => {
    const req = await chargeRequest();
    await arm('charge', '500');
    expect(await rejection(fx.card.charge(req))).toBeInstanceOf(GatewayUnavailableError);
    expect((await executions(req.idempotencyKey)).executions).toBe(0);
    await fx.card.charge(req);
    expect((await executions(req.idempotencyKey)).executions).toBe(1);
  });

  it('different idempotency keys are different charges', async () => {
    const req = await chargeRequest();
    const a = await fx.card.charge(req);
    const b = await fx.card.charge({ ...req, idempotencyKey: key('charge') });
    expect(b.gatewayTid).not.toBe(a.gatewayTid);
  });

  it('reusing a key with another amount is refused, not replayed', async () => {
    const req = await chargeRequest();
    await fx.card.charge(req);
    // the PG's E422: our defect (a key derived twice for different charges), never a card decline
    const err = await rejection(fx.card.charge({ ...req, amount: req.amount + 1 }));
    expect(err).toBeInstanceOf(GatewayKeyReusedError);
    expect((await executions(req.idempotencyKey)).executions).toBe(1);
  });

  it('a refused charge is replayed as the same refusal', async () => {
    const issued = await fx.card.issueBillingKey({
      idempotencyKey: key('issue'),
      card: testCard({ number: '4000000000009995' }),
      orderName: 'x',
      subscriptionId: key('sub'),
    });
    const req = { ...(await chargeRequest()), gatewayBillingKey: issued.gatewayBillingKey };
    for (let i = 0; i < 2; i++) {
      const err = await rejection(fx.card.charge(req));
      expect((err as GatewayDeclinedError).pgErrorCode).toBe('C204');
    }
    expect(await executions(req.idempotencyKey)).toMatchObject({ executions: 1, tid: null });
  });
});

describe('unavailable gateways', () => {
  it('maps 500 / timeout / garbage on every operation to GatewayUnavailableError', async () => {
    const req = await chargeRequest();
    const paid = await fx.card.charge(req);
    const calls: [string, () => Promise<unknown>][] = [
      [
        'billing_key.issue',
        () => fx.card.issueBillingKey({ idempotencyKey: key('i'), card: testCard(), orderName: 'x', subscriptionId: 's' }),
      ],
      [
        'cancel',
        () => fx.card.cancel({ idempotencyKey: key('c'), gatewayTid: paid.gatewayTid, amount: 1, taxFree: 0, reason: 'r' }),
      ],
      ['billing_key.revoke', () => fx.card.destroyBillingKey({ gatewayBillingKey: req.gatewayBillingKey })],
      [
        'otp.request',
        () =>
          fx.identity.requestOtp({
            idempotencyKey: key('otp'),
            merchantId: 'm',
            person: { name: 'Kim', phone: '01012345678', identityNo: '9001011', carrier: 'SKT' },
            type: 'sms',
            clientIp: '127.0.0.1',
          }),
      ],
    ];
    for (const [operation, call] of calls) {
      for (const fault of ['500', 'garbage', 'timeout']) {
        await arm(operation, fault);
        const err = await rejection(call());
        expect(err, `${operation} ${fault}`).toBeInstanceOf(GatewayUnavailableError);
      }
    }
  });

  it('maps a refused connection to GatewayUnavailableError', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const registry = createGatewayRegistry({ sandboxUrl: `http://127.0.0.1:${port}`, timeoutMs: 1_000 });
    try {
      const err = await rejection(registry.get('sandbox_card')!.card!.destroyBillingKey({ gatewayBillingKey: 'sbk_x' }));
      expect(err).toBeInstanceOf(GatewayUnavailableError);
    } finally {
      await registry.close();
    }
  });

  describe('against a misbehaving HTTP server', () => {
    let server: Server;
    let answer: { status: number; body: string };
    let url: string;
    beforeAll(async () => {
      server = createServer((_req, res) => {
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(answer.body);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    const cases: [string, { status: number; body: string }, 'unavailable' | 'declined'][] = [
      ['a 503 with a refusal-looking body', { status: 503, body: '{"res_cd":"C204","res_msg":"x"}' }, 'unavailable'],
      ['a 200 with the wrong shape', { status: 200, body: '{"ok":true}' }, 'unavailable'],
      [
        'a success without the expected data',
        { status: 200, body: '{"res_cd":"0000","res_msg":"ok","data":{"tid":1}}' },
        'unavailable',
      ],
      ['a 404 page', { status: 404, body: '<html>not found</html>' }, 'unavailable'],
      ['a 302 redirect', { status: 302, body: '' }, 'unavailable'],
      ['an oversized body', { status: 200, body: `{"res_cd":"0000","res_msg":"${'x'.repeat(300_000)}"}` }, 'unavailable'],
      ['a well-formed refusal', { status: 200, body: '{"res_cd":"C999","res_msg":"nope"}' }, 'declined'],
    ];
    for (const [label, response, expected] of cases) {
      it(`treats ${label} as ${expected}`, async () => {
        answer = response;
        const registry = createGatewayRegistry({ sandboxUrl: url, timeoutMs: 1_000 });
        try {
          const err = await rejection(
            registry.get('sandbox_card')!.card!.charge({
              idempotencyKey: 'k',
              gatewayBillingKey: 'sbk_x',
              amount: 1,
              taxFree: 0,
              orderId: 'o',
              orderName: 'n',
              quota: 0,
            }),
          );
          expect(err).toBeInstanceOf(expected === 'declined' ? GatewayDeclinedError : GatewayUnavailableError);
          if (expected === 'declined') expect(err).toMatchObject({ pgErrorCode: 'C999', pgMessage: 'nope' });
        } finally {
          await registry.close();
        }
      });
    }
  });
});

describe('sandbox fault controls', () => {
  it('rejects an unknown X-Sandbox-Fault value and unknown operations', async () => {
    const viaHeader = await fx.postJson('/card/v1/billing-keys/revoke', { bkey: 'x' }, { 'x-sandbox-fault': 'explode' });
    expect(viaHeader.status).toBe(400);
    const armed = await fx.postJson('/_sandbox/faults', { operation: 'launch', fault: '500' });
    expect(armed.status).toBe(400);
  });

  it('applies a header fault to that request only', async () => {
    const faulted = await fx.postJson('/card/v1/billing-keys/revoke', { bkey: 'x' }, { 'x-sandbox-fault': '500' });
    expect(faulted.status).toBe(500);
    const normal = await fx.postJson('/card/v1/billing-keys/revoke', { bkey: 'x' });
    expect(JSON.parse(normal.text)).toMatchObject({ res_cd: 'C201' });
  });

  it('requires an Idempotency-Key on charges', async () => {
    const res = await fx.postJson('/card/v1/charges', {
      bkey: 'x',
      amount: 1,
      tax_free: 0,
      order_id: 'o',
      goods_name: 'g',
      installment: 0,
    });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toMatchObject({ res_cd: 'E400' });
  });

  it('counts replays and injected faults in the stats', async () => {
    const before = (await fx.getJson('/_sandbox/stats')).body as { idempotent_replays: number; injected_faults: number };
    const req = await chargeRequest();
    await fx.card.charge(req);
    await fx.card.charge(req);
    await fx.postJson('/card/v1/billing-keys/revoke', { bkey: 'x' }, { 'x-sandbox-fault': '500' });
    const after = (await fx.getJson('/_sandbox/stats')).body as { idempotent_replays: number; injected_faults: number };
    expect(after.idempotent_replays - before.idempotent_replays).toBe(1);
    expect(after.injected_faults - before.injected_faults).toBe(1);
  });
});

describe('shutdown', () => {
  it('closes promptly while an answer is held by a timeout fault', async () => {
    const local = await startSandboxFixture({ timeoutMs: 60_000, faultDelayMs: 600_000 });
    const req = await (async () => {
      const issued = await local.card.issueBillingKey({
        idempotencyKey: 'i',
        card: testCard(),
        orderName: 'x',
        subscriptionId: 's',
      });
      return {
        idempotencyKey: 'c',
        gatewayBillingKey: issued.gatewayBillingKey,
        amount: 1,
        taxFree: 0,
        orderId: 'o',
        orderName: 'n',
        quota: 0,
      };
    })();
    await local.postJson('/_sandbox/faults', { operation: 'charge', fault: 'timeout' });
    const pending = local.card.charge(req).then(
      () => 'answered',
      () => 'failed',
    );
    // Wait until the sandbox has executed the charge and is holding its answer.
    for (
      let i = 0;
      i < 200 && ((await local.getJson('/_sandbox/charges?idempotency_key=c')).body as { executions: number }).executions === 0;
      i++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await local.sandbox.close();
    expect(['answered', 'failed']).toContain(await pending);
    await local.registry.close();
    // Held for 600 s otherwise: finishing within this test's 20 s limit proves close released it.
  }, 20_000);
});

describe('concurrent duplicates', () => {
  it('ten simultaneous charges with one key charge once and all answer the same tid', async () => {
    const req = await chargeRequest();
    const results = await Promise.all(Array.from({ length: 10 }, () => fx.card.charge(req)));
    expect(new Set(results.map((r) => r.gatewayTid)).size).toBe(1);
    expect((await executions(req.idempotencyKey)).executions).toBe(1);
  });
});
