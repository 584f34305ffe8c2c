// What is built once per vitest run and shared by its test files: paygate's workflow bundle (webpack takes
// seconds) and a migrated PGlite cluster (initdb takes seconds; each test file is a process of its own).
// global-setup.ts gives the run a directory; the first file to ask for an artifact builds it there, the others
// wait for it. Outside a vitest run each process builds its own.
import { existsSync, mkdirSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inject } from 'vitest';

const SHARED_WAIT_MS = 120_000;

function runCacheDir(): string | undefined {
  try {
    return inject('runCacheDir');
  } catch {
    return undefined; // not in a vitest worker
  }
}

/**
 * The artifact `name` of this run: the first caller takes `name.building` with an atomic mkdir, builds, and renames
 * the result into place; the others wait for it. A builder that failed leaves `name.failed`, and each caller then
 * builds its own (so the failure shows in every file that needs it, with its own stack).
 */
export async function sharedRunArtifact(name: string, build: () => Promise<Uint8Array | string>): Promise<Buffer> {
  const dir = runCacheDir();
  const own = async () => Buffer.from(await build());
  if (!dir) return own();
  const file = join(dir, name);
  const failed = join(dir, `${name}.failed`);
  try {
    mkdirSync(join(dir, `${name}.building`));
  } catch {
    const deadline = Date.now() + SHARED_WAIT_MS;
    while (Date.now() < deadline) {
      if (existsSync(file)) return readFile(file);
      if (existsSync(failed)) return own();
      await new Promise((r) => setTimeout(r, 100));
    }
    return own();
  }
  try {
    const artifact = await own();
    await writeFile(`${file}.${process.pid}`, artifact);
    await rename(`${file}.${process.pid}`, file);
    return artifact;
  } catch (err) {
    await writeFile(failed, String(err)).catch(() => undefined);
    throw err;
  }
}
