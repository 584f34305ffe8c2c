// GET /: where a person who opens the server's address in a browser lands. In sandbox mode the dashboard (a 302);
// in production mode, where there is no dashboard, a small JSON index of what the server does serve.
import type { FastifyPluginAsync } from 'fastify';

/** The production index at GET /: the places worth knowing, relative to the server's address. */
export const ROOT_INDEX = { name: 'paygate', docs: '/docs', openapi: '/openapi.json', health: '/health' } as const;

export const rootRoutes: FastifyPluginAsync = async (app) => {
  const sandbox = app.deps.config.sandbox;
  // not part of the payment API: kept out of the OpenAPI document (isUiRoute in ../docs/openapi.ts)
  app.get('/', { config: { auth: 'none' }, schema: { hide: true } }, async (_request, reply) =>
    sandbox ? reply.redirect('/dashboard', 302) : ROOT_INDEX,
  );
};
