// The sandbox gateways as a process of their own, for split deployments (docker-compose): the API's
// SMS inbox route and the worker's gateway calls must reach the same sandbox.
//   SANDBOX_HOST (default 0.0.0.0), SANDBOX_PORT (default 8090), SANDBOX_SECRET (optional)
import closeWithGrace from 'close-with-grace';
import { createLogger } from '../logger.js';
import { startSandboxGateways } from './server.js';

const logger = createLogger({ level: process.env.LOG_LEVEL === 'debug' ? 'debug' : 'info' }).child({ component: 'sandbox-pg' });
const port = Number(process.env.SANDBOX_PORT ?? 8090);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write('paygate sandbox: SANDBOX_PORT must be a port number\n');
  process.exit(1);
}
const sandbox = await startSandboxGateways({
  host: process.env.SANDBOX_HOST ?? '0.0.0.0',
  port,
  logger,
  ...(process.env.SANDBOX_SECRET ? { secret: process.env.SANDBOX_SECRET } : {}),
});
logger.info({ url: sandbox.url }, 'sandbox gateways listening');
closeWithGrace({ delay: 5_000 }, () => sandbox.close());
