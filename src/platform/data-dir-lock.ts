// One `npm start` per DATA_DIR. Its database (PGlite), engine and sandbox files are a single process's to write: a
// second start on the same directory would print a fresh admin token and then fail deep inside one of them with a
// stack. The lock is a file naming the holder's pid, taken before anything else touches the directory; a lock whose
// process is gone (a kill -9, a crash) is taken over. The holder removes it when it exits.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const LOCK_FILE = 'paygate.pid';

/** Another live process holds the directory. */
export class DataDirInUseError extends Error {
  override readonly name = 'DataDirInUseError';
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `DATA_DIR ${dataDir} is in use by another paygate (pid ${pid}): stop it first (Ctrl-C in its terminal, or kill ${pid}), ` +
        'or start this one with another DATA_DIR.',
    );
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, owned by someone else
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes DATA_DIR for this process, or throws DataDirInUseError naming the live holder (nothing in the directory is
 * changed then). Returns the release, also run when the process exits.
 */
export function lockDataDir(dataDir: string, pid: number = process.pid): () => void {
  // created as preparePrivateDataDir would: owner-only
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, `${pid}\n`, { flag: 'wx', mode: 0o600 });
      const release = () => {
        try {
          if (readFileSync(file, 'utf8').trim() === String(pid)) rmSync(file, { force: true });
        } catch {
          // already gone
        }
      };
      process.once('exit', release);
      return release;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let holder = Number.NaN;
    try {
      holder = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
    } catch {
      // removed meanwhile: try again
    }
    if (Number.isInteger(holder) && holder > 0 && holder !== pid && alive(holder)) throw new DataDirInUseError(dataDir, holder);
    // stale (its process is gone): taken over
    rmSync(file, { force: true });
  }
  throw new Error(`could not take ${file}`);
}
