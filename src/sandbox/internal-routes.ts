// The sandbox's internal routes (/_sandbox/*, paygate's token only — checked by server.ts for every one of them):
// the fault board, the counters, what the PGs received, a charge's executions and state, the SMS inbox. Tests and
// paygate's own sandbox routes read and arm the PGs through them; a merchant never reaches them directly.
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import type { SandboxCardPg } from './card-pg.js';
import type { SandboxEscrowPg } from './escrow-pg.js';
import { type ArmedFault, type FaultBoard, SANDBOX_FAULTS, SANDBOX_OPERATIONS } from './faults.js';
import type { SandboxIdentityPg } from './identity-pg.js';
import type { PgCalls } from './pg-calls.js';

export interface InternalRoutesOptions {
  readonly calls: PgCalls;
  readonly faults: FaultBoard;
  readonly card: SandboxCardPg;
  readonly identity: SandboxIdentityPg;
  readonly escrow: SandboxEscrowPg;
}

export const internalRoutes: FastifyPluginAsync<InternalRoutesOptions> = async (
  app,
  { calls, faults, card, identity, escrow },
) => {
  const pgRequestsQuery = z.object({ tid: z.string().min(1).max(100) });
  app.get('/_sandbox/pg-requests', async (req, reply) => {
    const parsed = pgRequestsQuery.safeParse(req.query);
    if (!parsed.success) return reply.code(400).send({ res_cd: 'E400', res_msg: 'tid is required' });
    return {
      list: escrow.requestsFor(parsed.data.tid).map((r) => ({
        pg: r.pg,
        operation: r.operation,
        body: r.body,
        received_at: r.receivedAt.toISOString(),
      })),
    };
  });

  const armBody = z.object({
    operation: z.enum(SANDBOX_OPERATIONS),
    fault: z.enum(SANDBOX_FAULTS),
    count: z.number().int().min(1).max(1_000).default(1),
    merchant_id: z.string().min(1).max(200).optional(),
    pg: z.string().min(1).max(100).optional(),
  });
  const faultView = (f: ArmedFault) => ({
    fault_id: f.id,
    operation: f.operation,
    fault: f.fault,
    count: f.count,
    remaining: f.remaining,
    merchant_id: f.merchant ?? null,
    pg: f.pg ?? null,
    created_at: f.createdAt,
  });
  const merchantQuery = z.object({ merchant_id: z.string().min(1).max(200).optional() });
  app.post('/_sandbox/faults', async (req, reply) => {
    const parsed = armBody.safeParse(req.body);
    if (!parsed.success) return reply.code(400).send({ res_cd: 'E400', res_msg: 'malformed request' });
    const { operation, fault, count, merchant_id: merchant, pg } = parsed.data;
    const armed = faults.arm({ operation, fault, count, merchant, pg });
    if (armed === undefined) return reply.code(429).send({ res_cd: 'E429', res_msg: 'too many armed faults' });
    return { armed: { operation, fault, count }, fault: faultView(armed) };
  });
  app.get('/_sandbox/faults', async (req, reply) => {
    const parsed = merchantQuery.safeParse(req.query);
    if (!parsed.success) return reply.code(400).send({ res_cd: 'E400', res_msg: 'malformed request' });
    return { list: faults.list(parsed.data.merchant_id).map(faultView) };
  });
  app.delete('/_sandbox/faults', async (req, reply) => {
    const parsed = merchantQuery.safeParse(req.query);
    if (!parsed.success) return reply.code(400).send({ res_cd: 'E400', res_msg: 'malformed request' });
    return { armed: null, disarmed: faults.disarm(parsed.data.merchant_id) };
  });

  app.get('/_sandbox/stats', async () => ({
    card: {
      billing_keys_issued: card.stats.billingKeysIssued,
      billing_keys_revoked: card.stats.billingKeysRevoked,
      charges_approved: card.stats.chargesApproved,
      cancels_approved: card.stats.cancelsApproved,
    },
    identity: {
      otp_requests: identity.stats.otpRequests,
      sms_sent: identity.stats.smsSent,
      pushes_sent: identity.stats.pushesSent,
      confirmations: identity.stats.confirmations,
      wrong_otps: identity.stats.wrongOtps,
    },
    requests: calls.requests,
    idempotent_replays: calls.counters.idempotentReplays,
    injected_faults: calls.counters.injectedFaults,
  }));

  const chargesQuery = z.object({ idempotency_key: z.string().min(1) });
  app.get('/_sandbox/charges', async (req, reply) => {
    const parsed = chargesQuery.safeParse(req.query);
    if (!parsed.success) return reply.code(400).send({ res_cd: 'E400', res_msg: 'idempotency_key is required' });
    const key = parsed.data.idempotency_key;
    const executed = calls.executed('charge', key);
    return { idempotency_key: key, executions: executed?.count ?? 0, tid: executed?.tid ?? null };
  });
  app.get('/_sandbox/charges/:tid', async (req, reply) => {
    const { tid } = req.params as { tid: string };
    const charge = card.chargeState(tid);
    if (charge === undefined) return reply.code(404).send({ res_cd: 'C301', res_msg: 'unknown transaction' });
    return {
      tid: charge.tid,
      amount: charge.amount,
      tax_free: charge.taxFree,
      cancelled_amount: charge.cancelledAmount,
      cancelled_tax_free: charge.cancelledTaxFree,
      cancel_count: charge.cancelCount,
    };
  });

  const smsQuery = z.object({ phone: z.string().min(1) });
  app.get('/_sandbox/sms', async (req, reply) => {
    const parsed = smsQuery.safeParse(req.query);
    if (!parsed.success) return reply.code(400).send({ res_cd: 'E400', res_msg: 'phone is required' });
    return {
      list: identity.inboxFor(parsed.data.phone).map((m) => ({
        phone: m.phone,
        message: m.message,
        otp: m.otp,
        tid: m.tid,
        sent_at: m.sentAt.toISOString(),
      })),
    };
  });
};
