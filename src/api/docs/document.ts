// The OpenAPI document of the full API, built without a server: the app with every optional area
// registered (sandbox mode, the sandbox helpers, the sandbox clock) over an in-memory database that is
// dropped afterwards. `npm run client:generate` writes it beside the typed client.
import type { FastifyInstance } from 'fastify';
import { buildServices } from '../../composition/index.js';
import { createStores } from '../../composition/stores.js';
import { parseConfig } from '../../platform/config/index.js';
import { createGatewayRegistry } from '../../gateways/index.js';
import { createLogger } from '../../platform/logger.js';
import { createMetrics } from '../../platform/observability/metrics.js';
import { openDatabase } from '../../platform/db/db.js';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../platform/security/keyring.js';
import type { SandboxClock } from '../../platform/temporal/sandbox-clock.js';
import { buildApp } from '../app.js';

/** Never contacted: the document only needs the sandbox routes registered. */
const UNUSED_URL = 'http://127.0.0.1:9';

export async function buildOpenApiDocument(): Promise<Record<string, unknown>> {
  const database = await openDatabase({ inMemory: true });
  const gateways = createGatewayRegistry({ sandboxUrl: UNUSED_URL });
  let app: FastifyInstance | undefined;
  try {
    const epoch = new Date(0);
    const sandboxClock: SandboxClock = {
      now: () => epoch,
      read: async () => epoch,
      advance: async () => ({ now: epoch, settled: true }),
      observe: () => undefined,
    };
    const keyring = createKeyring(parseKeyringSpec(generateKeyringSpec('ephemeral')));
    const deps = {
      config: parseConfig({ PAYGATE_SANDBOX: 'true', LOG_LEVEL: 'silent', ADMIN_TOKEN: 'openapi-document-build-only' }),
      database,
      gateways,
      logger: createLogger({ level: 'silent' }),
      keyring,
      stores: createStores(database.db, keyring),
      metrics: createMetrics({ processMetrics: false }),
      sandboxUrl: UNUSED_URL,
      sandboxToken: 'openapi-document-build-only',
      sandboxClock,
    };
    app = await buildApp({ ...deps, services: buildServices(deps) });
    await app.ready();
    return JSON.parse(JSON.stringify(app.swagger())) as Record<string, unknown>;
  } finally {
    await app?.close();
    await gateways.close();
    await database.close();
  }
}
