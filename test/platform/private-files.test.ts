// DATA_DIR is the owner's alone: start what writes there (openCore: PGlite and the generated keyring;
// the embedded engine's journal and its token) under a permissive umask, then stat every file and directory.
import { chmod, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/platform/config/index.js';
import { createLogger } from '../../src/platform/logger.js';
import { temporalTransportOptions } from '../../src/platform/temporal/transport.js';
import { openCore, startConfiguredEngine } from '../../src/composition/index.js';

let root: string;
// this file sets the umask, and openCore does: the files that run after it in this process get theirs back
const umaskBefore = process.umask();
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'paygate-files-'));
});
afterAll(async () => {
  process.umask(umaskBefore);
  if (root) await rm(root, { recursive: true, force: true });
});

function capturingLogger() {
  let text = '';
  const logger = createLogger({
    level: 'info',
    destination: new Writable({
      write(chunk: Buffer, _e, cb) {
        text += chunk.toString();
        cb();
      },
    }),
  });
  return { logger, text: () => text };
}

async function walk(dir: string): Promise<{ path: string; mode: number; dir: boolean }[]> {
  const out = [{ path: dir, mode: (await stat(dir)).mode & 0o777, dir: true }];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(full)));
    else out.push({ path: full, mode: (await stat(full)).mode & 0o777, dir: false });
  }
  return out;
}

const octal = (mode: number) => mode.toString(8).padStart(4, '0');

describe('private files under DATA_DIR', () => {
  it('creates DATA_DIR 0700; PGlite, the keyring, the engine journal and token are owner-only', async () => {
    process.umask(0o022); // a typical default: what the files would get if nothing took care
    const dataDir = path.join(root, 'fresh', 'data');
    const config = parseConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'info' });
    const { logger, text } = capturingLogger();
    // opens PGlite (migrations write the cluster) and generates the keyring file
    const core = await openCore(config, logger);
    await core.close();
    // the engine as src/main.ts launches it, after openCore
    const engine = await startConfiguredEngine(config);
    try {
      // something in the journal: a started workflow
      const connection = await Connection.connect({ address: engine.address, ...temporalTransportOptions(engine.transport) });
      try {
        await new Client({ connection }).workflow.start('nothing', { taskQueue: 'files', workflowId: 'files-test' });
      } finally {
        await connection.close();
      }
    } finally {
      await engine.stop();
    }

    const entries = await walk(dataDir);
    const names = entries.map((e) => path.relative(dataDir, e.path));
    expect(names).toEqual(
      expect.arrayContaining(['encryption-keys', 'engine-token', 'temporal/temporal.db', 'pglite/PG_VERSION']),
    );
    expect(names.filter((n) => n.startsWith('pglite/')).length).toBeGreaterThan(100);
    expect(octal((await stat(dataDir)).mode & 0o777)).toBe('0700');
    const open = entries.filter((e) => (e.dir ? e.mode !== 0o700 : (e.mode & 0o077) !== 0));
    expect(open.map((e) => `${path.relative(dataDir, e.path)} ${octal(e.mode)}`)).toEqual([]);
    expect(text()).not.toContain('accessible to group or others');
  });

  it('warns at start-up when an existing DATA_DIR is group/world accessible, and leaves its mode alone', async () => {
    const dataDir = path.join(root, 'shared');
    await mkdir(dataDir);
    await chmod(dataDir, 0o755);
    const { logger, text } = capturingLogger();
    const core = await openCore(parseConfig({ DATA_DIR: dataDir }), logger);
    await core.close();
    const warning = text()
      .split('\n')
      .filter((l) => l.includes('accessible to group or others'))
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(warning).toHaveLength(1);
    expect(warning[0]!.level).toBe(40);
    expect(warning[0]!.msg).toContain(dataDir);
    expect(warning[0]!.msg).toContain('0755');
    expect((await stat(dataDir)).mode & 0o777).toBe(0o755);
  });
});
