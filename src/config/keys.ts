// The keyring of a running paygate: ENCRYPTION_KEYS when set; otherwise one key generated on first
// start and kept in DATA_DIR (mode 0600), so an embedded install survives restarts without setup.
// Several processes sharing one Postgres must share ENCRYPTION_KEYS instead.
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createKeyring, generateKeyringSpec, parseKeyringSpec, type Keyring } from '../security/keyring.js';
import type { Config } from './index.js';

export const LOCAL_KEYS_FILE = 'encryption-keys';

export async function loadKeyring(
  config: Pick<Config, 'encryptionKeys' | 'dataDir'>,
): Promise<{ keyring: Keyring; source: 'environment' | 'data-dir' }> {
  if (config.encryptionKeys) return { keyring: createKeyring(parseKeyringSpec(config.encryptionKeys)), source: 'environment' };
  const file = path.resolve(config.dataDir, LOCAL_KEYS_FILE);
  let spec: string;
  try {
    spec = (await readFile(file, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    spec = generateKeyringSpec();
    await writeFile(file, `${spec}\n`, { mode: 0o600, flag: 'wx' });
  }
  await chmod(file, 0o600);
  return { keyring: createKeyring(parseKeyringSpec(spec)), source: 'data-dir' };
}
