// The API's side of metrics and logs: every answered request is counted under its route pattern (a URL with ids
// in it would make a series per receipt), each handler runs inside its request's log context (services add the
// ids they learn to the request's log lines), and GET /metrics serves the process's registry behind the admin
// token, so a scraper reaches it like any admin client (Prometheus: `authorization: { credentials: <token> }`).
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { bindLogIds, type LogIds, runWithLogContext } from '../platform/observability/log-context.js';
import type { Metrics } from '../platform/observability/metrics.js';
import type { Logger } from '../platform/logger.js';

/** Path parameters that name something a log reader searches by. */
const ID_PARAMS = ['receipt_id', 'delivery_id', 'schedule_id', 'reserve_id'] as const;

/** The series of requests no route matched (scans, typos): one label value, whatever the URL. */
export const UNMATCHED_ROUTE = 'unmatched';

export const observabilityPlugin = fp<{ metrics: Metrics }>(
  async (app: FastifyInstance, { metrics }) => {
    app.addHook('onResponse', async (request, reply) => {
      metrics.httpRequest(
        request.method,
        request.routeOptions.url ?? UNMATCHED_ROUTE,
        reply.statusCode,
        reply.elapsedTime / 1000,
      );
    });

    // preHandler runs after body parsing, whose stream events would leave an earlier context
    app.addHook('preHandler', (request, _reply, done) => {
      runWithLogContext(request.log as unknown as Logger, () => {
        const params = (request.params ?? {}) as Record<string, unknown>;
        const ids: Record<string, string> = {};
        for (const name of ID_PARAMS) if (typeof params[name] === 'string') ids[name] = params[name];
        bindLogIds(ids as LogIds);
        done();
      });
    });

    app.get('/metrics', { config: { auth: 'admin' } }, async (_request, reply) => {
      const text = await metrics.render();
      return reply.type(metrics.contentType).send(text);
    });
  },
  { name: 'paygate-observability' },
);
