// The sandbox's signing secret (billing-key signatures, OTP digests, CI / DI derivation). Never a
// constant in the source: SANDBOX_SECRET when set, otherwise one generated on first start and kept in
// DATA_DIR (mode 0600, like the keyring in src/config/keys.ts), so sandbox billing keys and CIs stay
// valid across restarts of one installation and mean nothing anywhere else.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

export const SANDBOX_SECRET_FILE = 'sandbox-secret';

export async function loadSandboxSecret(opts: {
  readonly secret: string | undefined;
  readonly dataDir: string;
}): Promise<{ secret: string; source: 'environment' | 'data-dir' }> {
  if (opts.secret) return { secret: opts.secret, source: 'environment' };
  const file = path.resolve(opts.dataDir, SANDBOX_SECRET_FILE);
  let secret: string;
  try {
    secret = (await readFile(file, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    secret = randomBytes(32).toString('base64url');
    try {
      await writeFile(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    } catch (raced) {
      // another process (API and worker starting together) wrote it first: use theirs
      if ((raced as NodeJS.ErrnoException).code !== 'EEXIST') throw raced;
      secret = (await readFile(file, 'utf8')).trim();
    }
  }
  if (secret.length < 16) throw new Error(`${file} holds no usable sandbox secret; delete it to generate a new one`);
  await chmod(file, 0o600);
  return { secret, source: 'data-dir' };
}
