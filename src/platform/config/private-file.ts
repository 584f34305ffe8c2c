// Secrets a local install generates once and keeps under DATA_DIR (the keyring, the sandbox's signing
// secret): owner-only, and the same for every process of the install.
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * The trimmed content of `file`, written from `generate()` on first use (mode 0600, its folder 0700).
 * Processes starting together (API and worker) agree: the first writer wins and the others read it.
 */
export async function readOrCreatePrivateFile(file: string, generate: () => string): Promise<string> {
  let content: string;
  try {
    content = (await readFile(file, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    content = generate();
    try {
      await writeFile(file, `${content}\n`, { mode: 0o600, flag: 'wx' });
    } catch (raced) {
      if ((raced as NodeJS.ErrnoException).code !== 'EEXIST') throw raced;
      content = (await readFile(file, 'utf8')).trim();
    }
  }
  await chmod(file, 0o600);
  return content;
}
