// The sandbox PGs as `npm start`'s helper process (started by the composition root, never by hand; split
// deployments run src/sandbox/main.ts instead): loopback only, on a free port, until the process that started it
// lets go (src/platform/child-process.ts).
//   DATA_DIR: the secret (SANDBOX_SECRET, or generated once into DATA_DIR) and the state journal, as in process
//   SANDBOX_TOKEN: the Bearer token of the internal /_sandbox/* routes, chosen by the parent (never on argv)
//   LOG_LEVEL, LOG_FORMAT: as the parent's
//
// The sandbox clock: on the embedded engine's advanceable clock the PGs live in the business time, which is the
// wall clock plus the engine's offset. The parent sends each new offset as a request ({ offsetMs }) and waits for
// the answer before the work that follows it (an activity, the answer of an advance), so a PG never stamps a call
// with a time older than the caller's.
import path from 'node:path';
import { runAsChild } from '../platform/child-process.js';
import { createLogger, type Logger } from '../platform/logger.js';
import { loadSandboxSecret } from './secret.js';
import { startSandboxGateways } from './server.js';
import { SANDBOX_STATE_DIR } from './state-journal.js';

const token = process.env.SANDBOX_TOKEN;
const dataDir = process.env.DATA_DIR;
if (!token || !dataDir) throw new Error('the sandbox process needs SANDBOX_TOKEN and DATA_DIR from its parent');

const level = (process.env.LOG_LEVEL ?? 'info') as Logger['level'];
const format = process.env.LOG_FORMAT === 'pretty' || process.env.LOG_FORMAT === 'json' ? process.env.LOG_FORMAT : undefined;
const logger = createLogger({ level, ...(format ? { format } : {}) }).child({ component: 'sandbox-pg' });

let offsetMs = 0;
let sandbox: Awaited<ReturnType<typeof startSandboxGateways>> | undefined;
const child = runAsChild({
  name: 'paygate sandbox PGs',
  close: async () => sandbox?.close(),
  onRequest(body) {
    const offset = (body as { offsetMs?: unknown }).offsetMs;
    if (typeof offset !== 'number' || !Number.isFinite(offset)) throw new Error('expected { offsetMs: number }');
    offsetMs = offset;
    return offsetMs;
  },
});

const { secret } = await loadSandboxSecret({ secret: process.env.SANDBOX_SECRET?.trim() || undefined, dataDir });
sandbox = await startSandboxGateways({
  host: '127.0.0.1',
  port: 0,
  secret,
  token,
  logger,
  clock: () => new Date(Date.now() + offsetMs),
  // its state survives a restart of npm start (src/sandbox/state-journal.ts)
  stateDir: path.resolve(dataDir, SANDBOX_STATE_DIR),
});
child.ready({ url: sandbox.url });
