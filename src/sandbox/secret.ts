// The sandbox's signing secret (billing-key signatures, OTP digests, CI / DI derivation). Never a
// constant in the source: SANDBOX_SECRET when set, otherwise one generated on first start and kept in
// DATA_DIR (mode 0600, like the keyring in src/platform/config/keys.ts), so sandbox billing keys and CIs stay
// valid across restarts of one installation and mean nothing anywhere else.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { readOrCreatePrivateFile } from '../platform/config/private-file.js';

export const SANDBOX_SECRET_FILE = 'sandbox-secret';

export async function loadSandboxSecret(opts: {
  readonly secret: string | undefined;
  readonly dataDir: string;
}): Promise<{ secret: string; source: 'environment' | 'data-dir' }> {
  if (opts.secret) return { secret: opts.secret, source: 'environment' };
  const file = path.resolve(opts.dataDir, SANDBOX_SECRET_FILE);
  const secret = await readOrCreatePrivateFile(file, () => randomBytes(32).toString('base64url'));
  if (secret.length < 16) throw new Error(`${file} holds no usable sandbox secret; delete it to generate a new one`);
  return { secret, source: 'data-dir' };
}
