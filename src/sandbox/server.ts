// The sandbox PGs: a separate Fastify server on loopback that plays the external card and identity
// gateways over HTTP. It is an outside system to paygate: only the adapters (../gateways/sandbox-*.ts)
// know this wire format.
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
// The server is assembled here: the PGs' state, the journal, the token check of the internal routes, and one
// plugin per PG (card-routes.ts, identity-routes.ts, escrow-routes.ts) beside the internal routes
// (internal-routes.ts); what every PG operation shares is pg-calls.ts.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import Fastify, { LogController } from 'fastify';
import type { Logger } from 'pino';
import { SandboxCardPg } from './card-pg.js';
import { cardPgRoutes } from './card-routes.js';
import { SandboxEscrowPg } from './escrow-pg.js';
import { escrowPgRoutes } from './escrow-routes.js';
import { FaultBoard } from './faults.js';
import { SandboxIdentityPg } from './identity-pg.js';
import { identityPgRoutes } from './identity-routes.js';
import { internalRoutes } from './internal-routes.js';
import { PgCalls } from './pg-calls.js';
import { memoryJournal, openSandboxJournal, type JournalRecord, type SandboxJournal } from './state-journal.js';

export { SANDBOX_FAULTS, SANDBOX_OPERATIONS, type SandboxFault, type SandboxOperation } from './faults.js';

const DEFAULT_FAULT_DELAY_MS = 30_000;

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

export async function startSandboxGateways(opts: SandboxGatewaysOptions = {}): Promise<SandboxGateways> {
  const secret = opts.secret ?? randomBytes(32).toString('base64url');
  const token = opts.token ?? randomBytes(32).toString('base64url');
  const expectedAuthorization = createHash('sha256').update(`Bearer ${token}`).digest();
  const clock = opts.clock ?? (() => new Date());
  // The PGs write to the journal once it is open (replaying it writes nothing).
  let journal: SandboxJournal = memoryJournal();
  const currentJournal = () => journal;
  const sink = { write: (record: JournalRecord) => journal.write(record) };
  const card = new SandboxCardPg(secret, clock, sink);
  const identity = new SandboxIdentityPg(secret, clock, sink);
  const escrow = new SandboxEscrowPg(createHmac('sha256', token).update('escrow-notification').digest(), clock, sink);
  const faults = new FaultBoard(clock, sink);
  const calls = new PgCalls({
    secret,
    faults,
    journal: currentJournal,
    faultDelayMs: opts.faultDelayMs ?? DEFAULT_FAULT_DELAY_MS,
  });
  if (opts.stateDir !== undefined) {
    journal = openSandboxJournal({
      dir: opts.stateDir,
      secret,
      apply(record) {
        if (record.k === 'answer') calls.restore(record);
        else if (record.k.startsWith('card.')) card.restore(record);
        else if (record.k.startsWith('identity.')) identity.restore(record);
        else if (record.k.startsWith('escrow.')) escrow.restore(record);
        else if (record.k.startsWith('fault.')) faults.restore(record);
      },
      *snapshot() {
        yield* calls.snapshot();
        yield* card.snapshot();
        yield* identity.snapshot();
        yield* escrow.snapshot();
        yield* faults.snapshot();
      },
      warn: (message) => opts.logger?.warn(message),
    });
  }

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

  // Liveness for an orchestrator (docker-compose's healthcheck) and paygate's readiness probe: the journal is
  // replayed and the routes are registered before the server listens, so an answer means ready. No token: it
  // tells nothing about the state.
  app.get('/health', async () => ({ status: 'ok' }));

  const closing = new AbortController();
  await app.register(cardPgRoutes, { calls, card, escrow });
  await app.register(identityPgRoutes, { calls, identity });
  await app.register(escrowPgRoutes, { calls, card, escrow, journal: currentJournal, closing: closing.signal });
  await app.register(internalRoutes, { calls, faults, card, identity, escrow });

  const address = await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 0 });
  let closed: Promise<void> | undefined;
  return {
    url: address,
    token,
    close() {
      closed ??= (async () => {
        calls.close();
        closing.abort();
        await app.close();
        journal.close();
      })();
      return closed;
    },
  };
}
