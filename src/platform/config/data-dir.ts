// DATA_DIR holds the embedded database, the engine's journal and possibly the keyring: the owner's
// alone. Created 0700; an existing one that group or others can enter is reported, not changed
// (the operator chose its mode), so the start-up log can warn.
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from './index.js';

/** Whether this configuration keeps anything under DATA_DIR (PGlite, the embedded engine, a generated keyring). */
export function usesDataDir(config: Pick<Config, 'databaseUrl' | 'temporalAddress' | 'encryptionKeys'>): boolean {
  return !config.databaseUrl || !config.temporalAddress || !config.encryptionKeys;
}

/**
 * Files this process writes from now on are owner-only (umask 077; the embedded engine inherits it),
 * DATA_DIR exists with mode 0700 if it was missing. Returns a warning when DATA_DIR is group/world accessible.
 */
export async function preparePrivateDataDir(dataDir: string): Promise<string | undefined> {
  process.umask(0o077);
  const dir = path.resolve(dataDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const mode = (await stat(dir)).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    return `DATA_DIR ${dir} is accessible to group or others (mode ${mode.toString(8).padStart(4, '0')}): run chmod 700 on it; it holds the database, the Temporal journal and keys`;
  }
  return undefined;
}
