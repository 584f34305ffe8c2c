// The sandbox card PG's routes: billing keys (issue, revoke), charges, cancels, and the inquiry a merchant makes
// when it lost a charge's or cancel's answer. The behaviour is card-pg.ts; the shared handling of an operation
// (faults, validation, Idempotency-Key replay, journal) is pg-calls.ts.
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import type { SandboxCardPg } from './card-pg.js';
import type { SandboxEscrowPg } from './escrow-pg.js';
import { type PgCalls, tidField } from './pg-calls.js';
import { bodies } from './wire.js';

export interface CardPgRoutesOptions {
  readonly calls: PgCalls;
  readonly card: SandboxCardPg;
  /** keeps what the PGs received (GET /_sandbox/pg-requests) */
  readonly escrow: SandboxEscrowPg;
}

export const cardPgRoutes: FastifyPluginAsync<CardPgRoutesOptions> = async (app, { calls, card, escrow }) => {
  calls.route(app, {
    url: '/card/v1/billing-keys',
    operation: 'billing_key.issue',
    body: bodies.issue,
    requireIdempotencyKey: false,
    run: (b) => card.issueBillingKey(b),
    tidOf: tidField,
    context: (b) => ({ merchant: b.merchant_id, pg: 'sandbox_card' }),
  });
  calls.route(app, {
    url: '/card/v1/charges',
    operation: 'charge',
    body: bodies.charge,
    requireIdempotencyKey: true,
    run: (b) => {
      const outcome = card.charge(b);
      // what a merchant may see of it (GET /sandbox/v1/pg-requests): never the billing key
      const { bkey: _bkey, ...shown } = b;
      if (outcome.ok) escrow.receive(outcome.data.tid, 'sandbox_card', 'charge', shown);
      return outcome;
    },
    tidOf: tidField,
    context: (b) => ({ merchant: card.billingKeyMerchant(b.bkey), pg: 'sandbox_card' }),
  });
  calls.route(app, {
    url: '/card/v1/cancels',
    operation: 'cancel',
    body: bodies.cancel,
    requireIdempotencyKey: true,
    run: (b) => {
      const outcome = card.cancel(b);
      if (outcome.ok) escrow.receive(b.tid, card.chargeState(b.tid)?.pg ?? 'sandbox_card', 'cancel', b);
      return outcome;
    },
    context: (b) => {
      const charge = card.chargeState(b.tid);
      return { merchant: charge?.merchant, pg: charge?.pg ?? 'sandbox_card' };
    },
  });
  calls.route(app, {
    url: '/card/v1/billing-keys/revoke',
    operation: 'billing_key.revoke',
    body: bodies.revoke,
    requireIdempotencyKey: false,
    run: (b) => card.revokeBillingKey(b),
    context: (b) => ({ merchant: card.billingKeyMerchant(b.bkey), pg: 'sandbox_card' }),
  });

  // The inquiry a merchant (paygate) makes when it lost a charge's or cancel's answer: never executes anything.
  const inquiryBody = z.object({ operation: z.enum(['charge', 'cancel']), idempotency_key: z.string().min(1).max(255) });
  app.post('/card/v1/inquiries', async (req, reply) => {
    const parsed = inquiryBody.safeParse(req.body);
    if (!parsed.success) return reply.code(400).send({ res_cd: 'E400', res_msg: 'malformed request' });
    const stored = calls.storedAnswer(parsed.data.operation, parsed.data.idempotency_key);
    if (stored === undefined) return { res_cd: '0000', res_msg: 'approved', data: { state: 'not_found' } };
    if (stored.res_cd !== '0000') {
      return { res_cd: '0000', res_msg: 'approved', data: { state: 'refused', res_cd: stored.res_cd, res_msg: stored.res_msg } };
    }
    const tid = parsed.data.operation === 'charge' ? tidField(stored.data) : undefined;
    const amount = tid === undefined ? undefined : card.chargeState(tid)?.amount;
    return {
      res_cd: '0000',
      res_msg: 'approved',
      data: { state: 'executed', result: stored.data, ...(amount === undefined ? {} : { amount }) },
    };
  });
};
