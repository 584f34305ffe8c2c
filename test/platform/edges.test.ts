// The platform's edges: a generated ADMIN_TOKEN goes to the terminal and never into the JSON log, a
// forced sandbox is announced loudly, the engine listens on loopback in both launch forms, and
// gateway_url never comes from the request's Host header.
import { freePort } from '../../tools/child-processes.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { DEVSERVER_PATH } from '../../src/platform/temporal/embedded-engine.js';
import { verificationClient } from '../verification/fixtures.js';
import { buildTestApp } from '../helpers/app.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** Runs a process, collecting its output, until `done(stdout, stderr)` holds or `ms` pass; always SIGKILLed at the end. */
async function runUntil(
  args: string[],
  env: Record<string, string>,
  done: (stdout: string, stderr: string) => boolean,
  ms: number,
): Promise<{ stdout: string; stderr: string }> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    const check = () => {
      if (done(stdout, stderr)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      check();
    });
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      check();
    });
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  // a Temporal client or worker may trap SIGTERM: never leave one behind
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
  return { stdout, stderr };
}

/** Local addresses listening on `port` (Linux /proc/net/tcp and tcp6), e.g. ['127.0.0.1']. */
async function listeningAddresses(port: number): Promise<string[]> {
  const out: string[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(file, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 4 || fields[3] !== '0A') continue; // LISTEN
      const [hexIp, hexPort] = fields[1]!.split(':');
      if (Number.parseInt(hexPort!, 16) !== port) continue;
      if (hexIp!.length === 8) {
        out.push(
          (hexIp!.match(/../g) ?? [])
            .reverse()
            .map((b) => Number.parseInt(b, 16))
            .join('.'),
        );
      } else {
        out.push(hexIp === '00000000000000000000000001000000' ? '::1' : hexIp === '0'.repeat(32) ? '::' : hexIp!);
      }
    }
  }
  return out;
}

async function engineListensOn(args: (port: number) => string[]): Promise<string[]> {
  const port = await freePort();
  let addresses: string[] = [];
  const dir = await mkdtemp(path.join(tmpdir(), 'paygate-engine-'));
  dirs.push(dir);
  const child = spawn(process.execPath, [DEVSERVER_PATH, ...args(port)], { cwd: dir, stdio: 'ignore' });
  children.push(child);
  try {
    const deadline = Date.now() + 30_000;
    while (addresses.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      addresses = await listeningAddresses(port);
    }
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
  return addresses;
}

describe('engine listens on loopback unless told otherwise', () => {
  it('in the time-skipping form `<port>` (what @temporalio/testing launches)', async () => {
    expect(await engineListensOn((port) => [String(port)])).toEqual(['127.0.0.1']);
  });

  it('in the dev-server form without --ip', async () => {
    expect(await engineListensOn((port) => ['server', 'start-dev', '--port', String(port), '--headless'])).toEqual(['127.0.0.1']);
  });
});

describe('start-up output of the standalone API process', () => {
  it('prints a generated ADMIN_TOKEN to stderr only; the JSON log says one was generated, and warns about a forced sandbox', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'paygate-api-'));
    dirs.push(dataDir);
    const { stdout, stderr } = await runUntil(
      ['--import', 'tsx', 'src/api/server.ts'],
      {
        DATA_DIR: dataDir,
        // nothing listens there: the process gets as far as connecting to Temporal, which is enough
        TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`,
        PAYGATE_SANDBOX: 'true',
        LOG_LEVEL: 'info',
      },
      (out, err) => /generated for this run: \S+/.test(err) && out.includes('SANDBOX GATEWAYS ARE SERVED'),
      60_000,
    );
    const token = /generated for this run: (\S+)/.exec(stderr)?.[1];
    expect(token, stderr).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(stdout).not.toContain(token!);
    const lines = stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(lines.find((l) => l.msg.includes('ADMIN_TOKEN is not set'))).toMatchObject({ level: 40 });
    expect(lines.find((l) => l.msg.includes('SANDBOX GATEWAYS ARE SERVED'))).toMatchObject({ level: 40 });
  });

  it('refuses to start with sandbox off and no PUBLIC_BASE_URL, naming the variable', async () => {
    const { stderr } = await runUntil(
      ['--import', 'tsx', 'src/api/server.ts'],
      { TEMPORAL_ADDRESS: '127.0.0.1:1', ADMIN_TOKEN: 'a-long-enough-admin-token' },
      (_out, err) => err.includes('PUBLIC_BASE_URL'),
      60_000,
    );
    expect(stderr).toContain('invalid configuration');
    expect(stderr).toMatch(/PUBLIC_BASE_URL: required when sandbox mode is off/);
  });
});

describe('gateway_url', () => {
  it('comes from PUBLIC_BASE_URL, or in sandbox mode from the loopback address and PORT: never from the Host header', async () => {
    for (const [env, expected] of [
      [{ PORT: '8123' }, 'http://127.0.0.1:8123'],
      [{ PORT: '8123', PUBLIC_BASE_URL: 'https://pay.example.com' }, 'https://pay.example.com'],
    ] as const) {
      const t = await buildTestApp({ withTemporal: true, env });
      try {
        const project = await t.createProject();
        const api = verificationClient(t, project);
        const { receiptId, body } = await api.verified();
        expect(body.gateway_url).toBe(expected);
        const res = await t.app.inject({
          method: 'GET',
          url: `/v2/certificate/${receiptId}`,
          headers: { authorization: project.basicAuth, host: 'attacker.example', 'x-forwarded-host': 'attacker.example' },
        });
        expect(res.statusCode).toBe(200);
        expect(res.json().gateway_url).toBe(expected);
      } finally {
        await t.close();
      }
    }
  });
});
