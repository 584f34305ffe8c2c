// Identity verifications: the list, a new sandbox verification, one verification with its SMS inbox (the OTP as
// the sandbox inbox shows it), confirm and resend: the verification use cases the API routes call.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../platform/errors.js';
import { parseVerificationPg, parseVerificationRequest, VERIFICATION_METHOD } from '../../verification/rules.js';
import type { DashboardContext } from '../context.js';
import { field } from './forms.js';

const LIST_LIMIT = 50;
const PHONE = /^01\d{8,9}$/;
const session = { auth: 'none', dashboard: 'project' } as const;
type ById = { Params: { receipt_id: string } };

export async function verificationPages(app: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { services, gateways } = app.deps;
  const verifications = services.verifications;
  const identityPgs = (pgs: readonly string[]) => pgs.filter((pg) => gateways.get(pg)?.identity);
  const detail = (id: string, done: string) => `/dashboard/verifications/${encodeURIComponent(id)}?done=${done}`;

  app.get('/verifications', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'authentication');
    const list = await verifications.list(project, LIST_LIMIT);
    return ctx.render(request, reply, 'verifications', {
      title: 'Verifications',
      list,
      pgs: identityPgs(project.pgs),
    });
  });

  app.post('/verifications', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'authentication');
    const body = request.body;
    const apiBody = {
      pg: field(body, 'pg'),
      method: VERIFICATION_METHOD,
      order_name: field(body, 'order_name', { optional: true }) ?? 'Dashboard verification',
      authentication_id: field(body, 'authentication_id', { optional: true }) ?? `dashboard-${randomUUID().slice(0, 8)}`,
      username: field(body, 'username'),
      identity_no: field(body, 'identity_no'),
      phone: field(body, 'phone'),
      carrier: field(body, 'carrier'),
      authenticate_type: field(body, 'authenticate_type', { optional: true }) ?? 'sms',
    };
    const { pg } = parseVerificationPg(apiBody);
    const checked = await verifications.checkPg(project, pg);
    const row = await verifications.request(project, checked, parseVerificationRequest(apiBody, pg), request.ip);
    // the phone is kept sealed in the workflow only until confirmation: the inbox below is asked with the one typed
    return reply.redirect(
      `${detail(row.provider_receipt_id ?? row.receipt_id, 'requested')}&phone=${encodeURIComponent(apiBody.phone)}`,
      303,
    );
  });

  app.get<ById & { Querystring: { phone?: string } }>(
    '/verifications/:receipt_id',
    // the phone of the inbox is in the query string, which the request log line would print (as for /sandbox/v1/sms)
    { config: session, logLevel: 'warn', schema: { hide: true } },
    async (request, reply) => {
      const project = await ctx.project(request, 'authentication');
      const verification = await verifications.get(project, request.params.receipt_id);
      const phone = typeof request.query.phone === 'string' ? request.query.phone.replace(/\D/g, '') : '';
      if (phone !== '' && !PHONE.test(phone)) {
        throw new ApiError('INVALID_REQUEST', { message: 'phone must be a mobile number of 10-11 digits.' });
      }
      const inbox = phone === '' ? undefined : await verifications.sandboxInboxOf(project, verification.receiptId, phone);
      return ctx.render(request, reply, 'verifications-detail', {
        title: `Verification ${verification.receiptId}`,
        v: verification,
        phone,
        inbox,
      });
    },
  );

  app.post<ById>('/verifications/:receipt_id/confirm', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'authentication');
    const otp = field(request.body, 'otp', { optional: true }) ?? '';
    await verifications.confirm(project, request.params.receipt_id, { receipt_id: request.params.receipt_id, otp });
    return reply.redirect(detail(request.params.receipt_id, 'confirmed'), 303);
  });

  app.post<ById>('/verifications/:receipt_id/resend', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'authentication');
    await verifications.resend(project, request.params.receipt_id);
    const phone = field(request.body, 'phone', { optional: true });
    const inbox = phone !== undefined && PHONE.test(phone) ? `&phone=${encodeURIComponent(phone)}` : '';
    return reply.redirect(`${detail(request.params.receipt_id, 'resent')}${inbox}`, 303);
  });
}
