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
  const scoped = (scope: Scope) => ({ config: { auth: 'project' as const, scope } });

  app.post('/v2/request/authentication', scoped('authentication'), async (request) => {
    const { pg } = parseVerificationPg(request.body);
    const checked = await verifications.checkPg(request.project, pg);
    const row = await verifications.request(request.project, checked, parseVerificationRequest(request.body, pg), request.ip);
    return renderVerificationRequested(verifications.view(row, gatewayUrl(request), false));
  });

  app.post('/v2/authenticate/realarm', scoped('authentication'), async (request) => {
    const { receiptId } = parseReceiptIdBody(request.body);
    const row = await verifications.resend(request.project, receiptId);
    return renderVerificationRequested(verifications.view(row, gatewayUrl(request), false));
  });

  app.post('/v2/authenticate/confirm', scoped('authentication'), async (request) => {
    const { receiptId } = parseReceiptIdBody(request.body);
    const row = await verifications.confirm(request.project, receiptId, request.body, idempotency.keyProof(request));
    return renderVerificationResult(verifications.view(row, gatewayUrl(request), true));
  });

  app.get<{ Params: { receipt_id: string } }>('/v2/certificate/:receipt_id', scoped('certificate'), async (request) => {
    const row = await verifications.certificate(request.project, request.params.receipt_id);
    return renderVerificationResult(verifications.view(row, gatewayUrl(request), true));
  });

  if (deps.config.sandbox && deps.sandboxUrl) {
    app.get(
      '/sandbox/v1/sms',
      {
        // authentication: the inbox shows OTPs, so only a key that may run verifications reads it
        config: { auth: 'project', scope: 'authentication' },
        // The phone number is in the query string, and Fastify's "incoming request" line logs the URL.
        logLevel: 'warn',
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
