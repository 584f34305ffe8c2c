// The embedded database's process (started by pglite-process.ts, never by hand): PGlite on its data directory,
// served on a unix socket (pglite-wire-server.ts) until the process that started it lets go.
//   argv: <PGlite data directory> <socket path>
import { unlink } from 'node:fs/promises';
import type { PGlite } from '@electric-sql/pglite';
import { runAsChild } from '../child-process.js';
import { makeOwnerOnly, openPGliteDirectory } from './pglite-files.js';
import { servePGlite } from './pglite-wire-server.js';

const [dataDir, socketPath] = process.argv.slice(2);
if (!dataDir || !socketPath) throw new Error('usage: pglite-process-main <data directory> <socket path>');

let server: Awaited<ReturnType<typeof servePGlite>> | undefined;
let pglite: PGlite | undefined;
const child = runAsChild({
  name: 'paygate database',
  async close() {
    // every connection's transaction rolled back, then PGlite's own shutdown (a checkpoint), then the file modes;
    // the socket goes last: while it answers, no other process opens the cluster
    await server?.drain();
    if (pglite && !pglite.closed) await pglite.close();
    await makeOwnerOnly(dataDir);
    await server?.close();
  },
});

pglite = await openPGliteDirectory(dataDir);
// a socket left by a process that was killed: nothing answers on it (the launcher checked), so it goes
await unlink(socketPath).catch((err: NodeJS.ErrnoException) => {
  if (err.code !== 'ENOENT') throw err;
});
server = await servePGlite(pglite, socketPath);
child.ready({ socketPath });
