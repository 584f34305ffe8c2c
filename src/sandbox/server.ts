// The sandbox PGs: a separate Fastify server on loopback that plays the external card and identity
// gateways over HTTP. It is an outside system to paygate: only the adapters (../sandbox-card.ts,
// ../sandbox-identity.ts) know this wire format.
//
// Wire format (JSON in, JSON out)
//   Every answer is an envelope { res_cd, res_msg, data? }. res_cd '0000' = approved, with `data`;
//   any other res_cd is the PG's refusal (HTTP 200, or 4xx for malformed requests). HTTP 5xx means
//   the PG itself failed. Instants are ISO 8601 UTC strings; amounts are integer won.
//   Idempotency-Key header: a repeated key on the same operation replays the first answer without
//   doing anything again (bounded, journaled like the rest of the state); the same key with a different
//   body gives E422. It is required on charges and cancels.
//   merchant_id (issuance, payment, OTP request): the merchant the PG books the call to; the billing key,
//   charge, escrow order and verification it creates carry it on, so a merchant's faults follow its calls.
//
//   POST /card/v1/billing-keys          {card_no, card_pw2, buyer_auth_no, exp_yy, exp_mm, goods_name, customer_ref, merchant_id?}
//        -> {bkey, tid, card: {masked_no, issuer_name, issuer_code, kind: CREDIT|CHECK}, bkey_expires_at, issued_at}
//   POST /card/v1/charges               {bkey, amount, tax_free, order_id, goods_name, installment}
//        -> {tid, approval_no, approved_at, card, installment}
//   POST /card/v1/cancels               {tid, amount, tax_free, reason}  -> {cancel_tid, cancelled_at, remaining_amount}
//   POST /card/v1/billing-keys/revoke   {bkey} -> {}
//   POST /card/v1/inquiries             {operation: charge|cancel, idempotency_key} -> {state: executed|refused|not_found,
//        result? (the operation's data), amount? (a charge's), res_cd?, res_msg? (a refusal's)}: what the PG did under a key
//   POST /auth/v1/requests              {merchant_id, user_name, phone_no, birth_sex, telco, method: SMS|PASS, client_ip, site_url?}
//        -> {tid}
//   POST /auth/v1/resends               {tid} -> {}
//   POST /auth/v1/confirms              {tid, otp} -> {user_name, phone_no, birthday, sex: M|F, foreigner: '0'|'1', telco, ci, di}
//   POST /pay/v1/payments               {pg, amount, tax_free, order_id, goods_name, escrow, merchant_ref, notify_url?, merchant_id?}
//        -> {tid, approval_no, approved_at, card}   (refunded by /card/v1/cancels; an escrow PG opens an escrow order)
//   POST /escrow-a/v1/shipments         {tid, invoice_no, dlv_company_code, dlv_company_name, prepay, dlv_day, rcv_name,
//        rcv_tel, rcv_addr, rcv_zip, snd_name, snd_tel, snd_zip, snd_addr1, snd_addr2, return_url?} -> {confirm_url}
//   POST /escrow-a/v1/orders/status     {tid} -> {escrow_state: WAIT|DLV|CFRM|RJCT|RFND|HOLD}
//   POST /escrow-b/v1/invoices          {TID, INVOICE_NO, COURIER} -> {}
//   POST /escrow-b/v1/inquiry           {TID} -> {STATE: ready|shipping|confirmed|rejected|refunded|held}
//   Escrow notifications (the PG calling paygate): POST <notify_url> {notification_id, tid, merchant_ref, event,
//   occurred_at}, header x-sandbox-signature: t=<unix ms>,v1=<hex HMAC-SHA256 of "<t>.<body>">, keyed with
//   HMAC-SHA256(token, 'escrow-notification'); up to 3 attempts, 1 s apart, until a 2xx.
//
// Refusal codes
//   C101 invalid card number (not 15-16 digits or Luhn fails)   C102 card expired
//   C103 issuer refused issuance (card 4000000000000002)         C104 card password / owner identity blank
//   C105 invalid expiry                                          C201 invalid billing key (bad signature / format)
//   C202 billing key revoked                                     C203 billing key expired
//   C204 charge refused (keys issued from 4000000000009995)      C205 invalid amount
//   C206 check card cannot pay in instalments                    C207 invalid instalment months (0-36)
//   C301 unknown charge tid                                      C302 cancel exceeds the remaining amount
//   C303 cancel exceeds the remaining tax-free / taxable part
//   A101 SMS / push delivery failed (phone 01000000000)          A102 resend failed (phone 01000000001)
//   A103 invalid birth date / resident number digit              A201 unknown tid
//   A202 OTP mismatch                                            A203 OTP expired (30 minutes after sending)
//   A204 locked after 5 wrong OTPs                               A205 already confirmed (resend)
//   EA01 / B404 unknown escrow tid   EA02 / B409 shipping already registered   EA31 / B422 tracking number FAIL-PG refused
//   E400 malformed request   E404 no such route   E422 idempotency key reused with another body   E500 PG failure
//
// Card companies by leading digits (longest prefix wins): 4 Sandbox VISA (SVS), 5 Sandbox Master (SMC),
// 3 Sandbox AMEX (SAX), 9 Sandbox Domestic (SDM), 94 Sandbox Domestic Check (SDC, check card), other Sandbox Card (SOT).
// Billing keys are HMAC-signed tokens (see billing-key-token.ts): they survive a restart with the same secret.
// The secret is never a constant: the caller passes SANDBOX_SECRET or the one kept in DATA_DIR (secret.ts);
// without one, a random secret lives as long as this server.
// State: idempotency records, revocations, charges, OTP sessions, the SMS inbox, escrow orders, what the PGs
// received and the armed faults live in memory and, given a stateDir (DATA_DIR/sandbox-state), in a sealed
// journal there (state-journal.ts): a restart, even kill -9, loses none of it. Card data is never kept: a
// billing key is a signed token with the masked number, a charge keeps amounts. The counters of
// /_sandbox/stats count since this start.
// A pass push needs no OTP: the sandbox plays a user who approves every push at once, so confirm
// succeeds with an empty otp.
//
// Fault injection (tests)
//   Header `X-Sandbox-Fault: <fault>` on any PG request, or arm the next N requests of an operation:
//   POST /_sandbox/faults {operation, fault, count?, merchant_id?, pg?} -> {armed, fault: {fault_id, ...}};
//   with merchant_id (and pg) only that merchant's calls (to that PG) take it (faults.ts).
//   GET /_sandbox/faults?merchant_id= lists the armed ones, DELETE /_sandbox/faults?merchant_id= disarms them
//   (without merchant_id: all of them). Armed faults survive a restart.
//   Operations: billing_key.issue, charge, cancel, billing_key.revoke, otp.request, otp.resend, otp.confirm,
//   payment, escrow.ship, escrow.status, escrow.notify (the PG's notification to paygate).
//     drop          -> escrow.notify only: the notification is lost (never sent)
//     500           -> HTTP 500 before doing anything
//     timeout       -> does the operation (and records it for idempotency), then holds the answer for
//                      faultDelayMs (released early on close): the caller times out, a retry replays
//     garbage       -> does the operation, then answers a body that is not JSON
//     late          -> holds the request for faultDelayMs (past the caller's timeout), then does the operation
//                      (its answer goes nowhere; not done if the server closes first)
//     lost_response -> does the operation, then closes the connection without an answer
//
// Internal routes (/_sandbox/*: faults, stats, charges, sms) need `Authorization: Bearer <token>`, the
// token shared with paygate (SANDBOX_TOKEN, or a random one per process when paygate runs the sandbox
// in-process); anything else gets 401 E401. The PG routes above need no token: they hold only test data.
//
// Inspection (tests)
//   GET /_sandbox/stats                          counters; `requests` counts every PG request by operation
//   GET /_sandbox/charges?idempotency_key=...    {idempotency_key, executions, tid} — executions counts real charges
//   GET /_sandbox/charges/:tid                   {tid, amount, tax_free, cancelled_amount, cancelled_tax_free, cancel_count}
//   GET /_sandbox/sms?phone=...                  {list: [{phone, message, otp, tid, sent_at}]} newest first
//   GET /_sandbox/pg-requests?tid=...            {list: [{pg, operation, body, received_at}]} what the PGs received for a
//                                                payment or charge (executed charges and cancels, without the billing key), newest first
//   POST /_sandbox/escrow/events {tid, event, duplicate?} -> 202 {notification_id}: the buyer acts; the PG notifies
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import Fastify, { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { z } from 'zod';
import { BoundedMap } from './bounded-map.js';
import { SandboxCardPg } from './card-pg.js';
import { SandboxEscrowPg } from './escrow-pg.js';
import { BUYER_EVENTS } from '../escrow/rules.js';
import {
  type CallContext,
  FaultBoard,
  SANDBOX_FAULTS,
  SANDBOX_OPERATIONS,
  type ArmedFault,
  type SandboxFault,
  type SandboxOperation,
} from './faults.js';
import { SandboxIdentityPg } from './identity-pg.js';
import type { PgOutcome } from './outcome.js';
import { memoryJournal, openSandboxJournal, type JournalRecord, type SandboxJournal } from './state-journal.js';
import { bodies } from './wire.js';

export { SANDBOX_FAULTS, SANDBOX_OPERATIONS, type SandboxFault, type SandboxOperation } from './faults.js';

const DEFAULT_FAULT_DELAY_MS = 30_000;
const IDEMPOTENCY_CAPACITY = 50_000;

export interface SandboxGatewaysOptions {
  host?: string;
  port?: number;
  /** signs billing keys and derives CI / DI; unset: random for this server's lifetime */
  secret?: string;
  /** what the internal /_sandbox/* routes require as a Bearer token; unset: a random one (see `token`) */
  token?: string;
  logger?: Logger;
  /** the sandbox's notion of now (OTP expiry, card expiry); tests move it forward */
  clock?: () => Date;
  /** how long a `timeout` fault holds its answer (a `late` one its request) */
  faultDelayMs?: number;
  /** where the state is journaled (DATA_DIR/sandbox-state); unset: memory only, lost with the server */
  stateDir?: string;
}

export interface SandboxGateways {
  url: string;
  /** the Bearer token of the internal /_sandbox/* routes */
  token: string;
  close(): Promise<void>;
}

interface Envelope {
  readonly res_cd: string;
  readonly res_msg: string;
  readonly data?: unknown;
}
interface StoredAnswer {
  /** hash of the validated request body: a reused key must come with the same request */
  readonly fingerprint: string;
  readonly body: Envelope;
}

const answerRecord = (
  key: string,
  answer: StoredAnswer,
  executed: { count: number; tid: string | undefined },
): JournalRecord => ({
  k: 'answer',
  key,
  fp: answer.fingerprint,
  body: answer.body,
  count: executed.count,
  ...(executed.tid === undefined ? {} : { tid: executed.tid }),
});

const envelopeOf = (outcome: PgOutcome<unknown>): Envelope =>
  outcome.ok ? { res_cd: '0000', res_msg: 'approved', data: outcome.data } : { res_cd: outcome.code, res_msg: outcome.message };

export async function startSandboxGateways(opts: SandboxGatewaysOptions = {}): Promise<SandboxGateways> {
  const secret = opts.secret ?? randomBytes(32).toString('base64url');
  const token = opts.token ?? randomBytes(32).toString('base64url');
  const expectedAuthorization = createHash('sha256').update(`Bearer ${token}`).digest();
  const clock = opts.clock ?? (() => new Date());
  const faultDelayMs = opts.faultDelayMs ?? DEFAULT_FAULT_DELAY_MS;
  // The PGs write to the journal once it is open (replaying it writes nothing).
  let journal: SandboxJournal = memoryJournal();
  const sink = { write: (record: JournalRecord) => journal.write(record) };
  const card = new SandboxCardPg(secret, clock, sink);
  const identity = new SandboxIdentityPg(secret, clock, sink);
  const escrow = new SandboxEscrowPg(createHmac('sha256', token).update('escrow-notification').digest(), clock, sink);
  const faults = new FaultBoard(clock, sink);

  const answers = new BoundedMap<string, StoredAnswer>(IDEMPOTENCY_CAPACITY);
  const executions = new BoundedMap<string, { count: number; tid: string | undefined }>(IDEMPOTENCY_CAPACITY);
  if (opts.stateDir !== undefined) {
    journal = openSandboxJournal({
      dir: opts.stateDir,
      secret,
      apply(record) {
        if (record.k === 'answer') {
          const key = String(record.key);
          answers.set(key, { fingerprint: String(record.fp), body: record.body as Envelope });
          executions.set(key, { count: Number(record.count), tid: typeof record.tid === 'string' ? record.tid : undefined });
        } else if (record.k.startsWith('card.')) card.restore(record);
        else if (record.k.startsWith('identity.')) identity.restore(record);
        else if (record.k.startsWith('escrow.')) escrow.restore(record);
        else if (record.k.startsWith('fault.')) faults.restore(record);
      },
      *snapshot() {
        for (const [key, executed] of executions.pairs()) {
          const answer = answers.get(key);
          if (answer !== undefined) yield answerRecord(key, answer, executed);
        }
        yield* card.snapshot();
        yield* identity.snapshot();
        yield* escrow.snapshot();
        yield* faults.snapshot();
      },
      warn: (message) => opts.logger?.warn(message),
    });
  }
  const heldAnswers = new Set<() => void>();
  let closed = false;
  const counters = { idempotentReplays: 0, injectedFaults: 0 };
  const requests = Object.fromEntries(SANDBOX_OPERATIONS.map((op) => [op, 0])) as Record<SandboxOperation, number>;

  const app = Fastify({
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: false }),
    // Request URLs carry phone numbers (/_sandbox/sms?phone=): no per-request log lines.
    logController: new LogController({ disableRequestLogging: true }),
    forceCloseConnections: true,
    bodyLimit: 64 * 1024,
  });

  app.setErrorHandler((err: { statusCode?: number }, _req, reply) => {
    const status = err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    void reply
      .code(status)
      .send({ res_cd: status === 500 ? 'E500' : 'E400', res_msg: status === 500 ? 'gateway failure' : 'malformed request' });
  });
  app.setNotFoundHandler((_req, reply) => {
    void reply.code(404).send({ res_cd: 'E404', res_msg: 'no such route' });
  });

  // The internal routes reveal OTPs and charge state and can make the PGs fail: paygate's token only.
  // Compared as fixed-length digests, in constant time.
  app.addHook('onRequest', async (req, reply) => {
    // the matched route, not the raw URL: no spelling of the path (encoded, doubled slashes) slips past
    if (!req.routeOptions.url?.startsWith('/_sandbox/')) return;
    const given = createHash('sha256')
      .update(req.headers.authorization ?? '')
      .digest();
    if (!timingSafeEqual(given, expectedAuthorization)) {
      return reply.code(401).send({ res_cd: 'E401', res_msg: 'a valid sandbox token is required' });
    }
  });

  const nextFault = (
    operation: SandboxOperation,
    req: FastifyRequest,
    call: CallContext,
  ): SandboxFault | undefined | 'invalid' => {
    const header = req.headers['x-sandbox-fault'];
    if (header !== undefined) {
      return (SANDBOX_FAULTS as readonly string[]).includes(String(header)) ? (String(header) as SandboxFault) : 'invalid';
    }
    return faults.take(operation, call);
  };

  const holdAnswer = (): Promise<void> =>
    new Promise((resolve) => {
      const release = (): void => {
        clearTimeout(timer);
        heldAnswers.delete(release);
        resolve();
      };
      const timer = setTimeout(release, faultDelayMs);
      heldAnswers.add(release);
    });

  /** One PG operation: fault injection, body validation, idempotent replay, then the PG itself. */
  function pgRoute<S extends z.ZodType>(route: {
    readonly url: string;
    readonly operation: SandboxOperation;
    readonly body: S;
    readonly requireIdempotencyKey: boolean;
    readonly run: (body: z.infer<S>) => PgOutcome<unknown>;
    /** the transaction id an approved answer created, for the executions inspection */
    readonly tidOf?: (data: unknown) => string | undefined;
    /** whose call it is and for which PG, as far as the PG knows (for faults armed per merchant) */
    readonly context: (body: z.infer<S>) => CallContext;
  }): void {
    app.post(route.url, async (req: FastifyRequest, reply: FastifyReply) => {
      requests[route.operation]++;
      const parsed = route.body.safeParse(req.body);
      const fault = nextFault(route.operation, req, parsed.success ? route.context(parsed.data) : {});
      if (fault === 'invalid') return reply.code(400).send({ res_cd: 'E400', res_msg: 'unknown X-Sandbox-Fault value' });
      if (fault !== undefined) {
        counters.injectedFaults++;
        req.log.info({ operation: route.operation, fault }, 'sandbox fault injected');
      }
      if (fault === '500') return reply.code(500).send({ res_cd: 'E500', res_msg: 'injected gateway failure' });
      if (!parsed.success) return reply.code(400).send({ res_cd: 'E400', res_msg: 'malformed request' });
      if (fault === 'late') {
        await holdAnswer();
        // the PG went down before it got to the request
        if (closed) return reply.code(503).send({ res_cd: 'E500', res_msg: 'gateway shutting down' });
      }
      const keyHeader = req.headers['idempotency-key'];
      const key = typeof keyHeader === 'string' && keyHeader.length > 0 && keyHeader.length <= 255 ? keyHeader : undefined;
      if (key === undefined && (route.requireIdempotencyKey || keyHeader !== undefined)) {
        return reply.code(400).send({ res_cd: 'E400', res_msg: 'Idempotency-Key header missing or invalid' });
      }

      let answer: StoredAnswer;
      // keyed: a request body may hold card data, and a plain hash of it could be guessed back
      const fingerprint = createHmac('sha256', secret).update(JSON.stringify(parsed.data)).digest('base64url');
      const cacheKey = key === undefined ? undefined : `${route.operation}\u0000${key}`;
      const stored = cacheKey === undefined ? undefined : answers.get(cacheKey);
      if (stored !== undefined) {
        if (stored.fingerprint !== fingerprint) {
          return reply.code(422).send({ res_cd: 'E422', res_msg: 'idempotency key reused with a different request' });
        }
        counters.idempotentReplays++;
        answer = stored;
      } else {
        // what the PG did and the answer it will replay reach the journal together, before the answer leaves
        answer = journal.batch(() => {
          const outcome = route.run(parsed.data);
          const made = { fingerprint, body: envelopeOf(outcome) };
          if (cacheKey !== undefined) {
            answers.set(cacheKey, made);
            const tid = outcome.ok ? route.tidOf?.(outcome.data) : undefined;
            const previous = executions.get(cacheKey);
            const executed = { count: (previous?.count ?? 0) + 1, tid: tid ?? previous?.tid };
            executions.set(cacheKey, executed);
            journal.write(answerRecord(cacheKey, made, executed));
          }
          return made;
        });
      }

      if (fault === 'lost_response') {
        reply.hijack();
        reply.raw.socket?.destroy();
        return reply;
      }
      if (fault === 'timeout') await holdAnswer();
      if (fault === 'garbage') return reply.code(200).type('application/json').send('{"res_cd": "00<html>Bad Gateway');
      return reply.code(200).send(answer.body);
    });
  }

  const tidField = (data: unknown): string | undefined =>
    typeof data === 'object' && data !== null && 'tid' in data && typeof data.tid === 'string' ? data.tid : undefined;

  pgRoute({
    url: '/card/v1/billing-keys',
    operation: 'billing_key.issue',
    body: bodies.issue,
    requireIdempotencyKey: false,
    run: (b) => card.issueBillingKey(b),
    tidOf: tidField,
    context: (b) => ({ merchant: b.merchant_id, pg: 'sandbox_card' }),
  });
  pgRoute({
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
  pgRoute({
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
  pgRoute({
    url: '/card/v1/billing-keys/revoke',
    operation: 'billing_key.revoke',
    body: bodies.revoke,
    requireIdempotencyKey: false,
    run: (b) => card.revokeBillingKey(b),
    context: (b) => ({ merchant: card.billingKeyMerchant(b.bkey), pg: 'sandbox_card' }),
  });
  pgRoute({
    url: '/auth/v1/requests',
    operation: 'otp.request',
    body: bodies.otpRequest,
    requireIdempotencyKey: false,
    run: (b) => identity.requestOtp(b),
    tidOf: tidField,
    context: (b) => ({ merchant: b.merchant_id, pg: 'sandbox_identity' }),
  });
  pgRoute({
    url: '/auth/v1/resends',
    operation: 'otp.resend',
    body: bodies.otpResend,
    requireIdempotencyKey: false,
    run: (b) => identity.resendOtp(b),
    context: (b) => ({ merchant: identity.sessionMerchant(b.tid), pg: 'sandbox_identity' }),
  });
  pgRoute({
    url: '/auth/v1/confirms',
    operation: 'otp.confirm',
    body: bodies.otpConfirm,
    requireIdempotencyKey: false,
    run: (b) => identity.confirmOtp(b),
    context: (b) => ({ merchant: identity.sessionMerchant(b.tid), pg: 'sandbox_identity' }),
  });

  pgRoute({
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
  pgRoute({
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
  pgRoute({
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
  pgRoute({
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
  pgRoute({
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

  /** Sends a notification to paygate: up to 3 attempts, 1 s apart, until a 2xx; stops when the server closes. */
  const notifyAbort = new AbortController();
  const sendNotification = async (url: string, body: string): Promise<void> => {
    for (let attempt = 1; attempt <= 3 && !notifyAbort.signal.aborted; attempt++) {
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-sandbox-signature': escrow.sign(body, Date.now()) },
          body,
          redirect: 'manual',
          signal: AbortSignal.any([notifyAbort.signal, AbortSignal.timeout(10_000)]),
        });
        await res.body?.cancel();
        if (res.ok) return;
      } catch {
        // unreachable: the next attempt
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000).unref());
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
    const acted = journal.batch(() => escrow.buyerEvent(tid, event));
    if (!acted.known) return reply.code(404).send({ res_cd: 'EA01', res_msg: 'unknown escrow transaction' });
    const notification = acted.notification;
    if (notification === undefined) return reply.code(202).send({ notification_id: null, sent: false });
    requests['escrow.notify']++;
    const order = escrow.order(tid);
    const dropped = nextFault('escrow.notify', req, { merchant: order?.merchant, pg: order?.pg }) !== undefined;
    if (dropped) counters.injectedFaults++;
    else {
      // the notification travels after the answer, as a PG's would
      void (async () => {
        await sendNotification(notification.url, notification.body);
        if (duplicate) await sendNotification(notification.url, notification.body);
      })();
    }
    return reply.code(202).send({ notification_id: notification.notificationId, sent: !dropped });
  });

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
    requests,
    idempotent_replays: counters.idempotentReplays,
    injected_faults: counters.injectedFaults,
  }));

  // The inquiry a merchant (paygate) makes when it lost a charge's or cancel's answer: never executes anything.
  const inquiryBody = z.object({ operation: z.enum(['charge', 'cancel']), idempotency_key: z.string().min(1).max(255) });
  app.post('/card/v1/inquiries', async (req, reply) => {
    const parsed = inquiryBody.safeParse(req.body);
    if (!parsed.success) return reply.code(400).send({ res_cd: 'E400', res_msg: 'malformed request' });
    const stored = answers.get(`${parsed.data.operation}\u0000${parsed.data.idempotency_key}`)?.body;
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

  const chargesQuery = z.object({ idempotency_key: z.string().min(1) });
  app.get('/_sandbox/charges', async (req, reply) => {
    const parsed = chargesQuery.safeParse(req.query);
    if (!parsed.success) return reply.code(400).send({ res_cd: 'E400', res_msg: 'idempotency_key is required' });
    const key = parsed.data.idempotency_key;
    const executed = executions.get(`charge\u0000${key}`);
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

  const address = await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 0 });
  let closing: Promise<void> | undefined;
  return {
    url: address,
    token,
    close() {
      closing ??= (async () => {
        closed = true;
        notifyAbort.abort();
        for (const release of [...heldAnswers]) release();
        await app.close();
        journal.close();
      })();
      return closing;
    },
  };
}
