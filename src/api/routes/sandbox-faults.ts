// Sandbox faults for merchants' own tests (sandbox mode only; 404 otherwise): POST /sandbox/v1/faults
// {pg, operation, fault, count?} arms a fault on the project's next `count` calls of one sandbox PG
// operation, GET lists the armed ones, DELETE disarms them. src/gateways/sandbox-faults.ts.
import type { FastifyInstance } from 'fastify';
import { parseFault } from '../../gateways/index.js';
import { createIdempotencyHooks } from '../idempotency.js';

export async function sandboxFaultRoutes(app: FastifyInstance): Promise<void> {
  const { deps } = app;
  // the services have it in sandbox mode with the sandbox's address
  const faults = deps.services.sandboxFaults;
  if (!deps.config.sandbox || !faults) return;
  const idempotency = createIdempotencyHooks({
    idempotency: deps.stores.idempotency,
    clock: deps.wallClock,
    keyring: deps.keyring,
  });
  // faults exist to test what a merchant's payments do when the PG fails: the scope that makes payments
  const access = { auth: 'project', scope: 'subscribe_payment' } as const;

  app.post(
    '/sandbox/v1/faults',
    {
      config: access,
      preHandler: idempotency.preHandler,
      onSend: idempotency.onSend,
    },
    async (request, reply) => reply.code(201).send(await faults.arm(request.project, parseFault(request.project, request.body))),
  );

  app.get('/sandbox/v1/faults', { config: access }, async (request) => ({ list: await faults.list(request.project) }));

  app.delete('/sandbox/v1/faults', { config: access }, async (request) => faults.disarm(request.project));
}
