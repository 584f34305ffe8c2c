// The flow benchmark's harness keeps working: `npm run bench:flows` with a few flows starts paygate as `npm start`
// does and the baseline, drives two flows against both, and prints their rows. Figures are not judged here (a
// benchmark prints them; these machines are shared and noisy), only that every flow ran and answered.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

it('bench:flows runs charge and receipt lookup against paygate and the baseline and prints their rows', async () => {
  // its own process group, so the stack it starts dies with it whatever happens
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'bench/flows.ts', '-n', '3', '--callers', '2', '--only', 'charge,receipt'],
    {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const killGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  const timer = setTimeout(killGroup, 280_000);
  try {
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, output).toBe(0);
  } finally {
    clearTimeout(timer);
    killGroup();
  }
  for (const flow of ['charge', 'receipt']) {
    const row = output.split('\n').find((l) => l.startsWith(`| ${flow} |`));
    expect(row, output).toBeDefined();
    // throughput on both sides and a ratio: numbers, not dashes
    expect(row).toMatch(new RegExp(`^\\| ${flow} \\| [\\d.]+ /s \\| [\\d.]+ /s \\| [\\d.]+ \\|`));
  }
  expect(output).toContain('measured 2 flows on paygate and the baseline; none failed');
}, 300_000);
