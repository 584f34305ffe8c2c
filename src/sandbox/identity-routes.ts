// The sandbox identity PG's routes: an SMS OTP / pass push request, its resend and its confirm. The behaviour is
// identity-pg.ts; the shared handling of an operation is pg-calls.ts.
import type { FastifyPluginAsync } from 'fastify';
import type { SandboxIdentityPg } from './identity-pg.js';
import { type PgCalls, tidField } from './pg-calls.js';
import { bodies } from './wire.js';

export interface IdentityPgRoutesOptions {
  readonly calls: PgCalls;
  readonly identity: SandboxIdentityPg;
}

export const identityPgRoutes: FastifyPluginAsync<IdentityPgRoutesOptions> = async (app, { calls, identity }) => {
  calls.route(app, {
    url: '/auth/v1/requests',
    operation: 'otp.request',
    body: bodies.otpRequest,
    requireIdempotencyKey: false,
    run: (b) => identity.requestOtp(b),
    tidOf: tidField,
    context: (b) => ({ merchant: b.merchant_id, pg: 'sandbox_identity' }),
  });
  calls.route(app, {
    url: '/auth/v1/resends',
    operation: 'otp.resend',
    body: bodies.otpResend,
    requireIdempotencyKey: false,
    run: (b) => identity.resendOtp(b),
    context: (b) => ({ merchant: identity.sessionMerchant(b.tid), pg: 'sandbox_identity' }),
  });
  calls.route(app, {
    url: '/auth/v1/confirms',
    operation: 'otp.confirm',
    body: bodies.otpConfirm,
    requireIdempotencyKey: false,
    run: (b) => identity.confirmOtp(b),
    context: (b) => ({ merchant: identity.sessionMerchant(b.tid), pg: 'sandbox_identity' }),
  });
};
