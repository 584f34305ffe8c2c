// Receipts (search by order_id / receipt_id, detail, cancel) and billing keys: the receipt, cancel and billing-key
// use cases the API routes call.
import type { FastifyInstance } from 'fastify';
import { parseCancelRequest } from '../../payments/receipt-rules.js';
import type { DashboardContext } from '../context.js';
import { field, intField } from './forms.js';

const LIST_LIMIT = 50;
const session = { auth: 'none', dashboard: 'project' } as const;

export async function paymentPages(app: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { services } = app.deps;

  app.get<{ Querystring: { q?: string } }>('/receipts', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'receipt');
    const q = typeof request.query.q === 'string' ? request.query.q.trim().slice(0, 200) : '';
    const receipts = await services.receipts.list(project, { ...(q ? { search: q } : {}), limit: LIST_LIMIT });
    return ctx.render(request, reply, 'receipts', { title: 'Receipts', receipts, q });
  });

  app.get<{ Params: { receipt_id: string } }>(
    '/receipts/:receipt_id',
    { config: session, schema: { hide: true } },
    async (request, reply) => {
      const project = await ctx.project(request, 'receipt');
      const receipt = await services.receipts.lookup(project, request.params.receipt_id);
      const attention = await services.receipts.attentionOf(project, request.params.receipt_id);
      return ctx.render(request, reply, 'receipts-detail', { title: `Receipt ${receipt.receipt_id}`, receipt, attention });
    },
  );

  app.post<{ Params: { receipt_id: string } }>(
    '/receipts/:receipt_id/cancel',
    { config: session, schema: { hide: true } },
    async (request, reply) => {
      const project = await ctx.project(request, 'cancel');
      const price = intField(request.body, 'cancel_price', { optional: true });
      const message = field(request.body, 'cancel_message', { optional: true });
      const cancel = parseCancelRequest({
        receipt_id: request.params.receipt_id,
        ...(price !== undefined ? { cancel_price: price } : {}),
        ...(message !== undefined ? { cancel_message: message } : {}),
      });
      await services.cancels.cancel(project, cancel, request.log);
      return reply.redirect(`/dashboard/receipts/${encodeURIComponent(request.params.receipt_id)}?done=cancelled`, 303);
    },
  );

  app.get('/billing-keys', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'billing_key');
    const keys = await services.billingKeys.list(project, LIST_LIMIT);
    return ctx.render(request, reply, 'billing-keys', { title: 'Billing keys', keys });
  });
}
