// The sandbox payment window and escrow PGs' routes: one-off payments (an escrow PG's opens an escrow order), the
// two escrow PGs' shipping and status calls in their own wire formats, and the buyer's events
// (POST /_sandbox/escrow/events), after which the PG notifies paygate as a real PG would: signed, after its answer,
// redelivered for about two minutes until paygate answers 2xx. The behaviour is card-pg.ts (payments) and escrow-pg.ts; the shared handling is pg-calls.ts.
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { BUYER_EVENTS } from '../escrow/rules.js';
import type { SandboxCardPg } from './card-pg.js';
import type { SandboxEscrowPg } from './escrow-pg.js';
import { type PgCalls, tidField } from './pg-calls.js';
import type { SandboxJournal } from './state-journal.js';
import { bodies } from './wire.js';

/** The waits between a notification's attempts: a PG keeps redelivering for a while (about two minutes here). */
const NOTIFICATION_RETRY_WAITS_MS = [1_000, 2_000, 5_000, 10_000, 20_000, 30_000, 60_000] as const;

export interface EscrowPgRoutesOptions {
  readonly calls: PgCalls;
  readonly card: SandboxCardPg;
  readonly escrow: SandboxEscrowPg;
  readonly journal: () => SandboxJournal;
  /** aborted when the server closes: notifications still being sent stop */
  readonly closing: AbortSignal;
}

export const escrowPgRoutes: FastifyPluginAsync<EscrowPgRoutesOptions> = async (app, opts) => {
  const { calls, card, escrow } = opts;
  calls.route(app, {
    url: '/pay/v1/payments',
    operation: 'payment',
    body: bodies.pay,
    requireIdempotencyKey: true,
    run: (b) => {
      const outcome = card.pay(b);
      if (outcome.ok) {
        escrow.receive(outcome.data.tid, b.pg, 'payment', b);
        if (b.escrow) escrow.open(outcome.data.tid, b.pg, b.notify_url, b.merchant_ref, b.merchant_id);
      }
      return outcome;
    },
    tidOf: tidField,
    context: (b) => ({ merchant: b.merchant_id, pg: b.pg }),
  });
  calls.route(app, {
    url: '/escrow-a/v1/shipments',
    operation: 'escrow.ship',
    body: bodies.shipA,
    requireIdempotencyKey: true,
    run: (b) => {
      escrow.receive(b.tid, 'sandbox_escrow_a', 'escrow.ship', b);
      return escrow.shipA(b);
    },
    context: (b) => ({ merchant: escrow.order(b.tid)?.merchant, pg: 'sandbox_escrow_a' }),
  });
  calls.route(app, {
    url: '/escrow-a/v1/orders/status',
    operation: 'escrow.status',
    body: bodies.statusA,
    requireIdempotencyKey: false,
    run: (b) => {
      escrow.receive(b.tid, 'sandbox_escrow_a', 'escrow.status', b);
      return escrow.statusA(b);
    },
    context: (b) => ({ merchant: escrow.order(b.tid)?.merchant, pg: 'sandbox_escrow_a' }),
  });
  calls.route(app, {
    url: '/escrow-b/v1/invoices',
    operation: 'escrow.ship',
    body: bodies.shipB,
    requireIdempotencyKey: true,
    run: (b) => {
      escrow.receive(b.TID, 'sandbox_escrow_b', 'escrow.ship', b);
      return escrow.shipB(b);
    },
    context: (b) => ({ merchant: escrow.order(b.TID)?.merchant, pg: 'sandbox_escrow_b' }),
  });
  calls.route(app, {
    url: '/escrow-b/v1/inquiry',
    operation: 'escrow.status',
    body: bodies.statusB,
    requireIdempotencyKey: false,
    run: (b) => {
      escrow.receive(b.TID, 'sandbox_escrow_b', 'escrow.status', b);
      return escrow.statusB(b);
    },
    context: (b) => ({ merchant: escrow.order(b.TID)?.merchant, pg: 'sandbox_escrow_b' }),
  });

  /**
   * Sends a notification to paygate until a 2xx, as a PG redelivers: NOTIFICATION_RETRY_WAITS_MS apart (about two
   * minutes in all, so a paygate restarting or briefly down still hears it); stops when this server closes. A
   * notification that never arrives is the reconcile timer's (the `drop` fault shows it).
   */
  const sendNotification = async (url: string, body: string): Promise<void> => {
    for (let attempt = 1; attempt <= NOTIFICATION_RETRY_WAITS_MS.length + 1 && !opts.closing.aborted; attempt++) {
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-sandbox-signature': escrow.sign(body, Date.now()) },
          body,
          redirect: 'manual',
          signal: AbortSignal.any([opts.closing, AbortSignal.timeout(10_000)]),
        });
        await res.body?.cancel();
        if (res.ok) return;
      } catch {
        // unreachable: the next attempt
      }
      const wait = NOTIFICATION_RETRY_WAITS_MS[attempt - 1];
      if (wait === undefined) return;
      await new Promise((resolve) => setTimeout(resolve, wait).unref());
    }
  };

  const buyerEventBody = z.object({
    tid: z.string().min(1).max(100),
    event: z.enum(BUYER_EVENTS),
    duplicate: z.boolean().default(false),
  });
  app.post('/_sandbox/escrow/events', async (req, reply) => {
    const parsed = buyerEventBody.safeParse(req.body);
    if (!parsed.success) return reply.code(400).send({ res_cd: 'E400', res_msg: 'malformed request' });
    const { tid, event, duplicate } = parsed.data;
    const acted = opts.journal().batch(() => escrow.buyerEvent(tid, event));
    if (!acted.known) return reply.code(404).send({ res_cd: 'EA01', res_msg: 'unknown escrow transaction' });
    const notification = acted.notification;
    if (notification === undefined) return reply.code(202).send({ notification_id: null, sent: false });
    calls.requests['escrow.notify']++;
    const order = escrow.order(tid);
    const dropped = calls.nextFault('escrow.notify', req, { merchant: order?.merchant, pg: order?.pg }) !== undefined;
    if (dropped) calls.counters.injectedFaults++;
    else {
      // the notification travels after the answer, as a PG's would
      void (async () => {
        await sendNotification(notification.url, notification.body);
        if (duplicate) await sendNotification(notification.url, notification.body);
      })();
    }
    return reply.code(202).send({ notification_id: notification.notificationId, sent: !dropped });
  });
};
