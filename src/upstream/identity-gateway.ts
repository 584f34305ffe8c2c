// REST identity verification at an upstream provider, behind the one gateway adapter contract: the OTP request,
// resend and confirm are the provider's `/v2/request/authentication`, `/v2/authenticate/realarm` and
// `/v2/authenticate/confirm`, called with the project's keys there under derived Idempotency-Keys. The provider's
// receipt_id is the verification's (requestOtp's `receiptId`); paygate's workflow still owns the 30-minute windows,
// the resend and wrong-OTP caps and the purge of CI / DI. The provider's refusals (a wrong OTP: 2405) come back
// as refusals, with the provider's code and text.
import { createHash } from 'node:crypto';
import type { IdentityGateway } from '../gateways/index.js';
import { type ProviderCall, send } from './card-gateway.js';
import { providerAuthenticationRequested, providerAuthenticationResult } from './rules.js';

/** The method value of an identity verification request (the spec's '본인인증'). */
const VERIFICATION_METHOD = '본인인증';

export function createUpstreamIdentityGateway(call: ProviderCall, pg: string): IdentityGateway {
  return {
    async requestOtp(req) {
      const requested = await send(
        call,
        {
          method: 'POST',
          path: '/v2/request/authentication',
          idempotencyKey: req.idempotencyKey,
          body: {
            pg,
            method: VERIFICATION_METHOD,
            order_name: req.orderName ?? 'identity verification',
            authentication_id: req.authenticationId ?? req.idempotencyKey,
            username: req.person.name,
            identity_no: req.person.identityNo,
            phone: req.person.phone,
            carrier: req.person.carrier,
            authenticate_type: req.type,
            client_ip: req.clientIp,
            ...(req.siteUrl !== undefined ? { site_url: req.siteUrl } : {}),
          },
        },
        providerAuthenticationRequested,
      );
      // the provider's calls name its receipt_id; the merchant is shown the provider's PG transaction id, as directly
      const shownTid = requested.authenticate_data?.tid;
      return { tid: requested.receipt_id, receiptId: requested.receipt_id, ...(shownTid ? { shownTid } : {}) };
    },

    async resendOtp(req) {
      await send(
        call,
        { method: 'POST', path: '/v2/authenticate/realarm', idempotencyKey: req.idempotencyKey, body: { receipt_id: req.tid } },
        providerAuthenticationRequested.pick({ receipt_id: true }),
      );
    },

    async confirmOtp(req) {
      // one key per (verification, OTP): a lost answer's retry gets the first result, another OTP is another try
      const idempotencyKey = `cfm_${createHash('sha256').update(`confirm\u0000${req.tid}\u0000${req.otp}`).digest('hex').slice(0, 40)}`;
      const result = await send(
        call,
        { method: 'POST', path: '/v2/authenticate/confirm', idempotencyKey, body: { receipt_id: req.tid, otp: req.otp } },
        providerAuthenticationResult,
      );
      const person = result.authenticate_data;
      return {
        name: person.name,
        phone: person.phone,
        birth: person.birth,
        gender: person.gender,
        foreigner: person.foreigner,
        carrier: person.carrier,
        ci: person.unique,
        di: person.di,
      };
    },
  };
}
