// How long `npm start` takes to be ready, cold (a fresh DATA_DIR: keys, database, engine journal created) and warm (the
// same DATA_DIR again), read off its own progress lines; and how long `npm run admin -- --help` takes. Prints a table
// for docs/benchmarks.md. Run it on a quiet machine:
//
//   npm run bench:startup [-- --runs 3]
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, ROOT } from '../tools/child-processes.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' } } });
const runs = Math.max(1, Number(values.runs));

/** One `npm start` until its banner: the seconds each progress line printed. */
async function start(dataDir: string): Promise<Record<string, number>> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(await freePort()), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  const startedAt = performance.now();
  let stderr = '';
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no banner within 120 s:\n${stderr}`)), 120_000);
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes('paygate is ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => reject(new Error(`npm start exited (${code}):\n${stderr}`)));
    });
  } finally {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }
  const stages: Record<string, number> = { ready: (performance.now() - startedAt) / 1000 };
  for (const m of stderr.matchAll(/^paygate: (.+) \((\d+\.\d) s\)$/gm)) stages[m[1]!.replace(/ \(.*\)$/, '')] = Number(m[2]);
  return stages;
}

async function timed(args: string[]): Promise<number> {
  const startedAt = performance.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn('npm', args, { cwd: ROOT, stdio: 'ignore' });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`npm ${args.join(' ')} exited ${code}`))));
  });
  return (performance.now() - startedAt) / 1000;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows: Record<string, Record<string, number[]>> = { cold: {}, warm: {} };
for (let i = 0; i < runs; i++) {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'paygate-startup-'));
  try {
    for (const kind of ['cold', 'warm'] as const) {
      const stages = await start(dataDir);
      for (const [stage, s] of Object.entries(stages)) rows[kind]![stage] = [...(rows[kind]![stage] ?? []), s];
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}
const admin: number[] = [];
for (let i = 0; i < runs; i++) admin.push(await timed(['run', '-s', 'admin', '--', '--help']));

const stageNames = Object.keys(rows.cold!).filter((s) => s !== 'ready');
console.log(`npm start until its banner, median of ${runs} (seconds since start at each progress line)\n`);
console.log(`| start | ${stageNames.join(' | ')} | banner (wall) |`);
console.log(`|---|${stageNames.map(() => '---').join('|')}|---|`);
for (const kind of ['cold', 'warm'] as const) {
  const r = rows[kind]!;
  console.log(
    `| ${kind} | ${stageNames.map((s) => (r[s] ? median(r[s]).toFixed(1) : '-')).join(' | ')} | ${median(r.ready!).toFixed(1)} |`,
  );
}
console.log(`\n\`npm run admin -- --help\`: ${median(admin).toFixed(2)} s (median of ${runs})`);
