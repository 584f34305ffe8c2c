// The standalone worker's metrics endpoint: the worker process has no HTTP API, but its activities are where webhook
// attempts, schedule charges and reserve charges happen, so its registry needs a listener of its own. GET /metrics
// only, behind the same admin token as the API's /metrics, bound to loopback unless WORKER_METRICS_HOST says
// otherwise. Answers in the catalog envelope; nothing else is served.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, type ErrorName } from '../errors.js';
import type { Metrics } from './metrics.js';

export interface MetricsListener {
  /** http://host:port */
  readonly address: string;
  close(): Promise<void>;
}

function tokenMatches(presented: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(presented), digest(expected));
}

function sendError(res: ServerResponse, name: ErrorName): void {
  const error = new ApiError(name);
  res.writeHead(error.statusCode, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(error.toBody()));
}

export async function startMetricsListener(opts: {
  readonly host: string;
  readonly port: number;
  readonly adminToken: string;
  readonly metrics: Pick<Metrics, 'render' | 'contentType'>;
}): Promise<MetricsListener> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) return sendError(res, 'NOT_FOUND');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!match || !tokenMatches(match[1]!, opts.adminToken)) return sendError(res, 'ADMIN_UNAUTHORIZED');
    opts.metrics.render().then(
      (text) => {
        res.writeHead(200, { 'content-type': opts.metrics.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      () => sendError(res, 'INTERNAL_ERROR'),
    );
  });
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((ready, fail) => {
    server.once('error', fail);
    server.listen(opts.port, opts.host, () => ready());
  });
  const bound = server.address() as AddressInfo;
  return {
    address: `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeIdleConnections();
      }),
  };
}
