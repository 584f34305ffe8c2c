// The keyring of a running paygate: ENCRYPTION_KEYS when set; otherwise one key generated on first
// start and kept in DATA_DIR (mode 0600), so an embedded install survives restarts without setup.
// Several processes sharing one Postgres must share ENCRYPTION_KEYS instead.
import path from 'node:path';
import { createKeyring, generateKeyringSpec, parseKeyringSpec, type Keyring } from '../security/keyring.js';
import type { Config } from './index.js';
import { readOrCreatePrivateFile } from './private-file.js';

export const LOCAL_KEYS_FILE = 'encryption-keys';

export async function loadKeyring(
  config: Pick<Config, 'encryptionKeys' | 'dataDir'>,
): Promise<{ keyring: Keyring; source: 'environment' | 'data-dir' }> {
  if (config.encryptionKeys) return { keyring: createKeyring(parseKeyringSpec(config.encryptionKeys)), source: 'environment' };
  const spec = await readOrCreatePrivateFile(path.resolve(config.dataDir, LOCAL_KEYS_FILE), () => generateKeyringSpec());
  return { keyring: createKeyring(parseKeyringSpec(spec)), source: 'data-dir' };
}
