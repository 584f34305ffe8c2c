// The embedded engine's credential (`npm start` without TEMPORAL_ADDRESS): the engine answers only calls that carry
// it (engine/src/auth.ts), so another user of the machine cannot drive paygate's workflows through its loopback port.
// ENGINE_TOKEN when set; otherwise one generated on first start and kept in DATA_DIR (mode 0600, like the keyring
// in keys.ts and the sandbox secret), the same across restarts of one installation. Never logged.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Config } from './index.js';
import { readOrCreatePrivateFile } from './private-file.js';

export const ENGINE_TOKEN_FILE = 'engine-token';

/** The engine refuses shorter tokens (MIN_AUTH_TOKEN_LENGTH of engine/src/auth.ts). */
const MIN_LENGTH = 16;

export async function loadEngineToken(
  config: Pick<Config, 'engineToken' | 'dataDir'>,
): Promise<{ token: string; source: 'environment' | 'data-dir' }> {
  if (config.engineToken) return { token: config.engineToken, source: 'environment' };
  const file = path.resolve(config.dataDir, ENGINE_TOKEN_FILE);
  const token = await readOrCreatePrivateFile(file, () => randomBytes(32).toString('base64url'));
  if (token.length < MIN_LENGTH) throw new Error(`${file} holds no usable engine token; delete it to generate a new one`);
  return { token, source: 'data-dir' };
}
