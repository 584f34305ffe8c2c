// What a first `npm start` shows (src/main.ts as a child process, as `npm start` runs it): a banner when ready with the
// addresses, the admin token's whereabouts and the next command, on stderr and never in the JSON log; and a taken
// PORT / ADMIN_PORT found before anything starts, as one line with a hint and exit 1, with nothing left running.
import { freePort } from '../../tools/child-processes.js';
import { bounded } from '../helpers/temporal.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const children: ChildProcess[] = [];
const dirs: string[] = [];
const held: Server[] = [];

/** SIGKILL to the child's whole group: tsx, main.ts and the engine it spawned. */
function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

afterAll(async () => {
  for (const child of children) killGroup(child);
  for (const server of held) server.close();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'paygate-first-run-'));
  dirs.push(dir);
  return dir;
}

/** A listening socket on 127.0.0.1 (port 0: any): another process's hold on the port. */
async function occupy(): Promise<number> {
  const server = createServer();
  held.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return (server.address() as { port: number }).port;
}

/** The processes whose command line names `text` (Linux /proc). */
async function processesNaming(text: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(text)) found.push(Number(entry));
  }
  return found;
}

interface Run {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** resolves when `done(stdout, stderr)` holds or the process exits; rejects after `ms` (the group is killed) */
  until(done: (stdout: string, stderr: string) => boolean, ms: number): Promise<void>;
}

/** src/main.ts as `npm start` runs it, in sandbox mode on its own DATA_DIR. */
function start(env: Record<string, string>): Run {
  // the caller's environment without what would point the server elsewhere (DATABASE_URL above all: this file runs on
  // PGlite only, test/platform/test-passes.test.ts)
  // (HOST too: the default, loopback, is what this file proves)
  const stripped = [
    'DATABASE_URL',
    'TEMPORAL_ADDRESS',
    'PAYGATE_SANDBOX',
    'ADMIN_PORT',
    'PUBLIC_BASE_URL',
    'ADMIN_TOKEN',
    'HOST',
  ];
  const base: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !stripped.includes(name)));
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...base, LOG_LEVEL: 'info', LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  const poke = () => {
    for (const w of waiters) w();
  };
  child.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString();
    poke();
  });
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
    poke();
  });
  child.once('exit', poke);
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    until: (done, ms) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          killGroup(child);
          reject(new Error(`not within ${ms} ms\nstdout:\n${stdout.slice(-4000)}\nstderr:\n${stderr.slice(-4000)}`));
        }, ms);
        const check = () => {
          if (done(stdout, stderr) || child.exitCode !== null || child.signalCode !== null) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve();
          }
        };
        waiters.add(check);
        check();
      }),
  };
}

async function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

describe('npm start, ready', () => {
  it('prints a banner once on stderr: the API, the dashboard, the docs, the admin token, the next command', async () => {
    const dataDir = await tempDir();
    const port = await freePort();
    const run = start({ DATA_DIR: dataDir, PORT: String(port) });
    try {
      await run.until((_out, err) => err.includes('npm run admin -- projects create'), 120_000);
      expect(run.child.exitCode, run.stderr()).toBeNull();
      const stderr = run.stderr();
      const api = `http://127.0.0.1:${port}`;
      expect(stderr).toContain('paygate is ready (sandbox mode');
      // a start that talks: one line per stage, in order, before the banner
      const stages = [
        `database ready (PGlite under ${dataDir})`,
        'sandbox gateways ready',
        'Temporal engine ready',
        'worker ready (workflow bundle built)',
        'API listening',
      ].map((stage) => {
        const at = stderr.search(new RegExp(`paygate: ${stage.replace(/[()]/g, '\\$&')} \\(\\d+\\.\\d s\\)\n`));
        expect(at, stage).toBeGreaterThanOrEqual(0);
        return at;
      });
      expect([...stages].sort((x, y) => x - y)).toEqual(stages);
      expect(stages.at(-1)!).toBeLessThan(stderr.indexOf('paygate is ready'));
      expect(stderr).toMatch(new RegExp(`API +${api}\\n`));
      expect(stderr).toMatch(new RegExp(`dashboard +${api}/dashboard\\n`));
      expect(stderr).toMatch(new RegExp(`API reference +${api}/docs\\n`));
      expect(stderr).toMatch(/admin token +generated for this run, printed above/);
      expect(stderr).toMatch(/reachable +from this machine only \(HOST=0\.0\.0\.0 exposes it\)\n/);
      expect(stderr).toContain(`PORT=${port} npm run admin -- projects create --name "my shop"`);
      expect(stderr.match(/paygate is ready/g)).toHaveLength(1);
      // the token: printed once on stderr above the banner, never in the JSON log; the log stays JSON lines
      const token = /generated for this run: (\S+)/.exec(stderr)?.[1];
      expect(token).toBeDefined();
      expect(stderr.indexOf(token!)).toBeLessThan(stderr.indexOf('paygate is ready'));
      const stdout = run.stdout();
      expect(stdout).not.toContain(token!);
      expect(stdout).not.toContain('paygate is ready');
      for (const line of stdout.split('\n').filter((l) => l.trim() !== '')) expect(() => JSON.parse(line), line).not.toThrow();
      // loopback by default: the machine's other addresses do not answer
      const outside = Object.values(networkInterfaces())
        .flat()
        .find((i) => i !== undefined && i.family === 'IPv4' && !i.internal)?.address;
      if (outside !== undefined) {
        const reached = await fetch(`http://${outside}:${port}/health`, { signal: AbortSignal.timeout(5_000) }).then(
          () => true,
          () => false,
        );
        expect(reached, `${outside}:${port}`).toBe(false);
      }
      // a second npm start on the same DATA_DIR: one line naming the first, before any token; nothing changed there
      const filesBefore = (await readdir(dataDir)).sort();
      const lockBefore = await readFile(path.join(dataDir, 'paygate.pid'), 'utf8');
      expect(lockBefore.trim()).toBe(String(run.child.pid));
      const second = start({ DATA_DIR: dataDir, PORT: String(await freePort()) });
      await second.until(() => false, 20_000).catch(() => undefined);
      expect(await exited(second.child), second.stderr()).toBe(1);
      expect(second.stderr().trim()).toBe(
        `DATA_DIR ${dataDir} is in use by another paygate (pid ${run.child.pid}): stop it first (Ctrl-C in its terminal, or kill ${run.child.pid}), or start this one with another DATA_DIR.`,
      );
      expect(second.stdout()).toBe('');
      expect((await readdir(dataDir)).sort()).toEqual(filesBefore);
      expect(await readFile(path.join(dataDir, 'paygate.pid'), 'utf8')).toBe(lockBefore);
      // and the address it shows leads where it says: GET / to the dashboard
      const root = await fetch(`${api}/`, { redirect: 'manual' });
      expect(root.status).toBe(302);
      expect(root.headers.get('location')).toBe('/dashboard');

      // Ctrl-C (SIGINT to the whole process group, the embedded engine included): a quiet stop. npm and tsx pass the
      // keypress on as well, so paygate hears it again at once: still the same Ctrl-C, not a forced exit
      process.kill(-run.child.pid!, 'SIGINT');
      process.kill(run.child.pid!, 'SIGINT');
      const code = await bounded(exited(run.child), 60_000, 'npm start to stop on Ctrl-C');
      expect(code, run.stderr()).toBe(0);
      const all = `${run.stdout()}${run.stderr()}`;
      // no SDK warning on a start or a stop, no raw colour codes in a log that is not a terminal
      expect(all).not.toContain('Ignoring WorkerOptions');
      expect(all).not.toMatch(/GoAway|shutdown_worker/);
      expect(all).not.toContain('\u001b[');
      expect(all).not.toMatch(/second SIGINT|again: exiting now/);
      const warnings = run
        .stdout()
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { level: number; msg?: string })
        .filter((l) => l.level >= 40);
      expect(warnings).toEqual([]);
      // the directory is free again
      await expect(readFile(path.join(dataDir, 'paygate.pid'), 'utf8')).rejects.toThrow();
    } finally {
      killGroup(run.child);
    }
  }, 150_000);
});

describe('npm start, a port already in use', () => {
  for (const variable of ['PORT', 'ADMIN_PORT'] as const) {
    it(`${variable} taken: one line with a hint, exit 1 within seconds, no stack, nothing started or left running`, async () => {
      const dataDir = await tempDir();
      const taken = await occupy();
      const env: Record<string, string> =
        variable === 'PORT'
          ? { DATA_DIR: dataDir, PORT: String(taken), ADMIN_TOKEN: 'a-long-enough-admin-token-0123456789' }
          : {
              DATA_DIR: dataDir,
              PORT: String(await freePort()),
              ADMIN_PORT: String(taken),
              ADMIN_HOST: '127.0.0.1',
              ADMIN_TOKEN: 'a-long-enough-admin-token-0123456789',
            };
      const startedAt = Date.now();
      const run = start(env);
      await run.until(() => false, 20_000).catch(() => undefined);
      const code = await exited(run.child);
      const elapsed = Date.now() - startedAt;
      expect(code, `${run.stdout()}\n${run.stderr()}`).toBe(1);
      // tsx's start-up is all of it (seconds on a busy machine); the proof that the database, the engine and the
      // worker never started is below: nothing under DATA_DIR
      expect(elapsed).toBeLessThan(15_000);
      expect(run.stderr().trim()).toBe(
        `paygate: port ${taken} is in use; set ${variable} to another port (${variable}=${taken + 1} npm start)`,
      );
      expect(run.stdout()).toBe('');
      expect(`${run.stdout()}${run.stderr()}`).not.toMatch(/EADDRINUSE|\n\s+at /);
      // nothing was opened under DATA_DIR (no database, no engine journal) and no engine runs for it
      expect(await readdir(dataDir)).toEqual([]);
      expect(await processesNaming(dataDir)).toEqual([]);
    }, 40_000);
  }
});
