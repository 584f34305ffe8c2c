// A script of the repository (a bench, the chaos driver) run as `npm run ...` runs it, for the tests that drive one:
// in a process group of its own, so the stack it starts dies with it whatever happens (SIGKILL to the group at the
// end and at the bound).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Runs `entry` with `args`; resolves with its exit code and its stdout and stderr together. */
export async function runScript(
  entry: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  boundMs: number,
): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
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
  const timer = setTimeout(killGroup, boundMs);
  try {
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { code, output };
  } finally {
    clearTimeout(timer);
    killGroup();
  }
}
