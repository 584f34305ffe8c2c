// GET /health: 200 {status:'ok'} only when the database and every readiness probe answer;
// otherwise 503 naming what is not ready. A load balancer may ask many times a second: a passing
// round is reused for a second and concurrent calls share the round in flight, while a failure is
// never reused, so recovery shows on the next call.
import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../platform/errors.js';
import { pingDatabase } from '../../platform/db/db.js';

/** A readiness probe: returns or resolves when the component is ready; throws, rejects or gives `false` when not. */
export type ReadinessProbe = () => unknown;

const PROBE_TIMEOUT_MS = 2_000;
/** How long a round in which every probe passed answers later calls. */
export const HEALTH_OK_REUSE_MS = 1_000;

async function probe(check: ReadinessProbe): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS);
  });
  try {
    const result = Promise.resolve()
      .then(check)
      .then((value) => value !== false)
      .catch(() => false);
    return await Promise.race([result, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export const healthRoutes: FastifyPluginAsync = async (app) => {
  let inFlight: Promise<string[]> | undefined;
  let passedAt = Number.NEGATIVE_INFINITY;

  /** The names of the probes that failed, from one round shared by every call that arrives while it runs. */
  const round = (): Promise<string[]> => {
    inFlight ??= (async () => {
      const checks: Record<string, ReadinessProbe> = {
        database: () => pingDatabase(app.deps.database),
        ...app.deps.readiness,
      };
      const names = Object.keys(checks);
      const results = await Promise.all(names.map((name) => probe(checks[name]!)));
      const notReady = names.filter((_, i) => !results[i]);
      if (notReady.length === 0) passedAt = performance.now();
      return notReady;
    })().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  // A load balancer or an orchestrator asks every few seconds: its requests write no "incoming request" /
  // "request completed" lines, which would fill the log; a failing round still writes its warning.
  app.get('/health', { config: { auth: 'none' }, logLevel: 'warn' }, async (request, reply) => {
    if (performance.now() - passedAt < HEALTH_OK_REUSE_MS) return { status: 'ok' };
    const notReady = await round();
    if (notReady.length === 0) return { status: 'ok' };
    request.log.warn({ not_ready: notReady }, 'health check failed');
    const error = new ApiError('SERVICE_UNAVAILABLE', { message: `Not ready: ${notReady.join(', ')}.` });
    return reply.code(503).send({ ...error.toBody(), status: 'unavailable', not_ready: notReady });
  });
};
