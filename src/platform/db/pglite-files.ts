// PGlite's data directory on disk: created private, and kept private after PGlite wrote to it.
import { chmod, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';

/** Opens (creating it the first time) the PGlite cluster in `dataDir`, owner-only. */
export async function openPGliteDirectory(dataDir: string): Promise<PGlite> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const pglite = new PGlite(dataDir);
  await pglite.waitReady;
  await makeOwnerOnly(dataDir);
  return pglite;
}

/**
 * PGlite's file system layer sets file modes itself (0666 for the initial cluster, whatever the
 * umask): every directory becomes 0700 and every file 0600, so the data (client keys, masked cards,
 * sealed identities) is the owner's alone.
 */
export async function makeOwnerOnly(dir: string): Promise<void> {
  await chmod(dir, 0o700);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) await makeOwnerOnly(full);
    else if (entry.isFile()) await chmod(full, 0o600);
  }
}
