// Escrow orders: a sandbox escrow payment, the orders, one order with shipping start, the buyer's events (the
// sandbox buyer-events use case: the sandbox PG acts and notifies paygate) and the transition history.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../platform/errors.js';
import { parseSandboxPayment } from '../../escrow/rules.js';
import { BUYER_EVENTS, nextEscrowStatus } from '../../escrow/status.js';
import type { DashboardContext } from '../context.js';
import { field, intField } from './forms.js';

const LIST_LIMIT = 50;
const session = { auth: 'none', dashboard: 'project' } as const;
type ById = { Params: { receipt_id: string } };

/** The couriers both sandbox escrow PGs know (README, sandbox test values). */
const COURIERS = ['CJ대한통운', '우체국택배', '한진택배', '롯데택배', '로젠택배', '경동택배', '기타'];

export async function escrowPages(app: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { services, gateways } = app.deps;
  const escrow = services.escrow;
  const detail = (id: string, done: string) => `/dashboard/escrow/${encodeURIComponent(id)}?done=${done}`;

  app.get('/escrow', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'receipt');
    const orders = await escrow.orders(project, LIST_LIMIT);
    const pgs = project.pgs.filter((pg) => gateways.get(pg)?.escrow);
    return ctx.render(request, reply, 'escrow', { title: 'Escrow orders', orders, pgs });
  });

  app.post('/escrow', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'subscribe_payment');
    const body = request.body;
    const receipt = await escrow.pay(
      project,
      parseSandboxPayment({
        pg: field(body, 'pg'),
        price: intField(body, 'price'),
        order_id: field(body, 'order_id', { optional: true }) ?? `dashboard-${randomUUID().slice(0, 8)}`,
        order_name: field(body, 'order_name'),
        escrow: true,
        user: {
          username: field(body, 'username', { optional: true }),
          phone: field(body, 'phone', { optional: true }),
          address: field(body, 'address', { optional: true }),
          zipcode: field(body, 'zipcode', { optional: true }),
        },
      }),
    );
    return reply.redirect(detail(receipt.receipt_id, 'paid'), 303);
  });

  app.get<ById>('/escrow/:receipt_id', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'receipt');
    const receipt = await services.receipts.lookup(project, request.params.receipt_id);
    const status = receipt.escrow_data?.status;
    if (status === undefined) throw new ApiError('RC_NOT_ESCROW');
    const events = await escrow.events(project, receipt.receipt_id);
    const buyerEvents = BUYER_EVENTS.filter((e) => nextEscrowStatus(status, e) !== undefined);
    return ctx.render(request, reply, 'escrow-detail', {
      title: `Escrow order ${receipt.receipt_id}`,
      receipt,
      status,
      events,
      buyerEvents,
      couriers: COURIERS,
      canShip: status === 0 && gateways.get(receipt.pg)?.escrow !== undefined,
      seller: project.seller,
    });
  });

  app.post<ById>('/escrow/:receipt_id/shipping', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'escrow_shipping_start');
    // the API route's seller-only rule (600), as its config declares it
    if (!project.seller) throw new ApiError('API_ONLY_SELLER');
    await escrow.shippingStart(project, request.params.receipt_id, {
      delivery_corp: field(request.body, 'delivery_corp'),
      tracking_number: field(request.body, 'tracking_number'),
    });
    return reply.redirect(detail(request.params.receipt_id, 'shipping'), 303);
  });

  app.post<ById>('/escrow/:receipt_id/events', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'escrow_shipping_start');
    await escrow.buyerEvent(project, request.params.receipt_id, { event: field(request.body, 'event') });
    return reply.redirect(detail(request.params.receipt_id, 'event'), 303);
  });
}
