// The sandbox gateways as a process of their own, for split deployments (docker-compose): the API's
// SMS inbox route and the worker's gateway calls must reach the same sandbox.
//   SANDBOX_HOST (default 127.0.0.1: loopback unless told otherwise), SANDBOX_PORT (default 8090),
//   SANDBOX_SECRET (optional: otherwise generated once into DATA_DIR, default ./.data; the state journal is
//   DATA_DIR/sandbox-state, sealed with it),
//   SANDBOX_TOKEN (the Bearer token of the internal /_sandbox/* routes; paygate sends the same one.
//   Unset: those routes are closed: a random token nobody is told)
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import closeWithGrace from 'close-with-grace';
import { createLogger } from '../platform/logger.js';
import { loadSandboxSecret } from './secret.js';
import { startSandboxGateways } from './server.js';
import { SANDBOX_STATE_DIR } from './state-journal.js';

const logger = createLogger({ level: process.env.LOG_LEVEL === 'debug' ? 'debug' : 'info' }).child({ component: 'sandbox-pg' });
const fail = (message: string): never => {
  process.stderr.write(`paygate sandbox: ${message}\n`);
  process.exit(1);
};
const port = Number(process.env.SANDBOX_PORT ?? 8090);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail('SANDBOX_PORT must be a port number');
const token = process.env.SANDBOX_TOKEN?.trim() || undefined;
if (token !== undefined && token.length < 16) fail('SANDBOX_TOKEN must be at least 16 characters');
const secretFromEnv = process.env.SANDBOX_SECRET?.trim() || undefined;
if (secretFromEnv !== undefined && secretFromEnv.length < 16) fail('SANDBOX_SECRET must be at least 16 characters');

const dataDir = process.env.DATA_DIR?.trim() || './.data';
const { secret, source } = await loadSandboxSecret({ secret: secretFromEnv, dataDir });
const sandbox = await startSandboxGateways({
  // its state (idempotency records, OTP sessions, the SMS inbox, escrow orders) survives a restart
  stateDir: path.resolve(dataDir, SANDBOX_STATE_DIR),
  host: process.env.SANDBOX_HOST?.trim() || '127.0.0.1',
  port,
  logger,
  secret,
  token: token ?? randomBytes(32).toString('base64url'),
});
if (token === undefined) {
  logger.warn('SANDBOX_TOKEN is not set: the internal /_sandbox/* routes (SMS inbox, faults, stats) refuse every request');
}
logger.info({ url: sandbox.url, secret_source: source }, 'sandbox gateways listening');
closeWithGrace({ delay: 5_000 }, () => sandbox.close());
