// REST identity verification: request, resend (realarm), confirm, certificate lookup — and, in sandbox
// mode, the SMS inbox. The use cases are in src/verification/ (service.ts puts them together); these handlers parse,
// call and render.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Scope } from '../../projects/scopes.js';
import { publicBaseUrlOf } from '../../platform/config/index.js';
import { formatTimestamp } from '../../platform/time.js';
import {
  parseReceiptIdBody,
  parseSandboxInboxQuery,
  parseVerificationPg,
  parseVerificationRequest,
  renderVerificationRequested,
  renderVerificationResult,
} from '../../verification/rules.js';
import { createIdempotencyHooks } from '../idempotency.js';

/** What the request and resend routes' documents say of paygate's send caps (src/verification/send-limit-rules.ts). */
const SEND_CAPS =
  "Every SMS / push sent, requests and resends alike, counts towards paygate's caps per phone number (default 6 in " +
  '10 minutes and 10 in 24 hours) and per project (default 1,000 an hour); past one, 9479 VERIFICATION_SEND_LIMIT ' +
  '(HTTP 429) names the limit, with Retry-After in seconds, and nothing is sent, stored or counted.';

export async function verificationRoutes(app: FastifyInstance): Promise<void> {
  const { deps } = app;
  const verifications = deps.services.verifications;
  // Idempotency-Key on every POST of this plugin (request, resend, confirm), as on the billing routes
  const idempotency = createIdempotencyHooks({
    idempotency: deps.stores.idempotency,
    clock: deps.wallClock,
    keyring: deps.keyring,
  });
  app.addHook('preHandler', async (request, reply) => {
    if (request.method === 'POST') await idempotency.preHandler(request, reply);
  });
  app.addHook('onSend', idempotency.onSend);
  const gatewayUrl = (_request: FastifyRequest) => publicBaseUrlOf(deps.config); // never the Host header
  const documented = (scope: Scope, summary: string, description: string) => ({
    config: { auth: 'project' as const, scope },
    schema: { summary, description, tags: ['verification'] },
  });

  app.post(
    '/v2/request/authentication',
    documented(
      'authentication',
      'Request an identity verification (SMS OTP or pass push)',
      'Starts the verification workflow and answers once the gateway has sent the SMS / push: status 51 with authenticate_data.tid and number_of_realarms 0. ' +
        SEND_CAPS,
    ),
    async (request) => {
      const { pg } = parseVerificationPg(request.body);
      await verifications.checkPg(request.project, pg);
      const row = await verifications.request(request.project, parseVerificationRequest(request.body, pg), request.ip);
      return renderVerificationRequested(verifications.view(row, gatewayUrl(request), false));
    },
  );

  app.post(
    '/v2/authenticate/realarm',
    documented(
      'authentication',
      'Resend the SMS OTP',
      'number_of_realarms grows before the gateway answers, so it also counts a failed resend (2411, or 9502 / 9504 with the receipt_id when the gateway could not be reached; 9481 while an upstream provider is down counts nothing). Only for SMS verifications (2412). ' +
        SEND_CAPS,
    ),
    async (request) => {
      const { receiptId } = parseReceiptIdBody(request.body);
      const row = await verifications.resend(request.project, receiptId);
      return renderVerificationRequested(verifications.view(row, gatewayUrl(request), false));
    },
  );

  app.post(
    '/v2/authenticate/confirm',
    documented(
      'authentication',
      'Confirm the OTP',
      'Within 30 minutes of the request. A wrong OTP gives 2405 (HTTP 500); a verification not awaiting an OTP (verified, expired, failed) gives 2404. ' +
        'An identity gateway that cannot be reached gives 9502 (HTTP 502) or 9504 (HTTP 504, no answer in time) with the receipt_id, 9481 (HTTP 503) while an upstream provider is down: confirm again with the same OTP.',
    ),
    async (request) => {
      const { receiptId } = parseReceiptIdBody(request.body);
      const row = await verifications.confirm(request.project, receiptId, request.body, idempotency.keyProof(request));
      return renderVerificationResult(verifications.view(row, gatewayUrl(request), true));
    },
  );

  app.get<{ Params: { receipt_id: string } }>(
    '/v2/certificate/:receipt_id',
    documented(
      'certificate',
      'Look up a verification result',
      'Only within 30 minutes after authenticated_at (2409 afterwards); 2408 before confirmation.',
    ),
    async (request) => {
      const row = await verifications.certificate(request.project, request.params.receipt_id);
      return renderVerificationResult(verifications.view(row, gatewayUrl(request), true));
    },
  );

  if (deps.config.sandbox && deps.sandboxUrl) {
    app.get(
      '/sandbox/v1/sms',
      {
        // authentication: the inbox shows OTPs, so only a key that may run verifications reads it
        config: { auth: 'project', scope: 'authentication' },
        // The phone number is in the query string, and Fastify's "incoming request" line logs the URL.
        logLevel: 'warn',
        schema: {
          summary: 'Sandbox SMS inbox',
          description: 'Messages the sandbox identity gateway sent to a phone, newest first. Sandbox mode only.',
          tags: ['sandbox'],
        },
      },
      async (request) => {
        const { phone } = parseSandboxInboxQuery(request.query);
        const list = await verifications.sandboxInbox(request.project, phone);
        return {
          list: list.map((m) => ({ phone: m.phone, message: m.message, otp: m.otp, sent_at: formatTimestamp(m.sentAt) })),
        };
      },
    );
  }
}
