// The engine's credential (`authToken`, `--auth-token-file`): with it, every WorkflowService, OperatorService and
// TestService call without `authorization: Bearer <token>` is UNAUTHENTICATED and changes nothing; the health check
// stays open; the right token works through the official SDK (client and worker). Without it nothing changes.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { type InternalConnectionOptions, InternalConnectionOptionsSymbol } from '@temporalio/client/lib/connection.js';
import { msToTs } from '@temporalio/common/lib/time.js';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer, type DevServer } from '../src/index.js';
import * as activities from './fixtures/activities.js';

const DEVSERVER = fileURLToPath(new URL('../../bin/temporal-devserver', import.meta.url));
const TOKEN = 'engine-test-token-0123456789abcdef';
const UNAUTHENTICATED = 16;

/** A connection that asks nothing at connect (Connection.connect would call GetSystemInfo), with TestService. */
function lazyConnection(address: string, authorization?: string): Connection {
  const options: InternalConnectionOptions = {
    address,
    ...(authorization !== undefined ? { metadata: { authorization } } : {}),
    [InternalConnectionOptionsSymbol]: { supportsTestService: true },
  };
  return Connection.lazy(options);
}

/** The gRPC status code a call ended with (0: it succeeded). */
async function codeOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 0;
  } catch (err) {
    return (err as { code?: number }).code ?? -1;
  }
}

describe('authToken', () => {
  let server: DevServer;
  const connections: Connection[] = [];
  const connection = (authorization?: string) => {
    const c = lazyConnection(server.address, authorization);
    connections.push(c);
    return c;
  };

  beforeAll(async () => {
    server = await startDevServer({ timeSkipping: false, port: 0, clockControl: true, authToken: TOKEN });
  });
  afterAll(async () => {
    for (const c of connections) await c.close().catch(() => undefined);
    await server?.close();
  });

  const presented: Array<[string, string | undefined]> = [
    ['no authorization', undefined],
    ['a wrong token', 'Bearer engine-test-token-0123456789abcdeX'],
    ['a prefix of the token', `Bearer ${TOKEN.slice(0, -1)}`],
    ['the token without the Bearer scheme', TOKEN],
    ['another scheme', `Basic ${TOKEN}`],
  ];
  for (const [what, authorization] of presented) {
    it(`refuses every service with ${what} (UNAUTHENTICATED) and changes nothing`, async () => {
      const c = connection(authorization);
      const workflowId = `auth-${randomUUID()}`;
      const calls = {
        list: c.workflowService.listWorkflowExecutions({ namespace: 'default' }),
        systemInfo: c.workflowService.getSystemInfo({}),
        start: c.workflowService.startWorkflowExecution({
          namespace: 'default',
          workflowId,
          workflowType: { name: 'anything' },
          taskQueue: { name: 'auth' },
          requestId: randomUUID(),
        }),
        signal: c.workflowService.signalWorkflowExecution({
          namespace: 'default',
          workflowExecution: { workflowId },
          signalName: 's',
          requestId: randomUUID(),
        }),
        pollActivities: c.workflowService.pollActivityTaskQueue({ namespace: 'default', taskQueue: { name: 'auth' } }),
        completeActivity: c.workflowService.respondActivityTaskCompleted({
          namespace: 'default',
          taskToken: Buffer.from('x'),
        }),
        operator: c.operatorService.listSearchAttributes({ namespace: 'default' }),
        addSearchAttribute: c.operatorService.addSearchAttributes({ namespace: 'default', searchAttributes: { Evil: 2 } }),
        clock: c.testService!.getCurrentTime({}),
        advance: c.testService!.sleep({ duration: msToTs('365 days') }),
      };
      const codes = Object.fromEntries(
        await Promise.all(Object.entries(calls).map(async ([name, call]) => [name, await codeOf(call)] as const)),
      );
      expect(codes).toEqual(Object.fromEntries(Object.keys(calls).map((name) => [name, UNAUTHENTICATED])));

      // nothing happened: no run, no search attribute, no clock move
      const good = connection(`Bearer ${TOKEN}`);
      const { executions } = await good.workflowService.listWorkflowExecutions({
        namespace: 'default',
        query: `WorkflowId="${workflowId}"`,
      });
      expect(executions).toEqual([]);
      const { customAttributes } = await good.operatorService.listSearchAttributes({ namespace: 'default' });
      expect(Object.keys(customAttributes ?? {})).not.toContain('Evil');
      const { time } = await good.testService!.getCurrentTime({});
      expect(Number(time?.seconds) * 1000).toBeLessThan(Date.now() + 3600_000);
    });
  }

  it('leaves the health check open: it says SERVING and nothing else', async () => {
    const response = await connection().healthService.check({});
    expect(response.status).toBe(1);
  });

  it('serves the official client and worker that present the token (scheme in any case)', async () => {
    const bundle = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('./fixtures/workflows.ts', import.meta.url)),
    });
    const clientConnection = await Connection.connect({
      address: server.address,
      metadata: { authorization: `bearer ${TOKEN}` },
    });
    connections.push(clientConnection);
    const native = await NativeConnection.connect({ address: server.address, metadata: { authorization: `Bearer ${TOKEN}` } });
    const taskQueue = `auth-${randomUUID()}`;
    try {
      const worker = await Worker.create({ connection: native, taskQueue, workflowBundle: bundle, activities });
      const client = new Client({ connection: clientConnection });
      const result = await worker.runUntil(async () => {
        // start, update, query, signal, result: the calls an application makes, each with the token
        const handle = await client.workflow.start('signalQueryUpdate', { taskQueue, workflowId: `auth-${randomUUID()}` });
        expect(await handle.executeUpdate('bump', { args: [2] })).toBe(2);
        expect(await handle.query('status')).toBe('waiting-v2');
        await handle.signal('approve', 'ada');
        return handle.result();
      });
      expect(result).toBe('approved:ada:2');
    } finally {
      await native.close();
    }
  });

  it('refuses a token too short to be one', async () => {
    await expect(startDevServer({ timeSkipping: false, port: 0, authToken: 'short' })).rejects.toThrow(/at least 16/);
  });
});

describe('without authToken', () => {
  it('serves calls that carry no credential, as before', async () => {
    const server = await startDevServer({ timeSkipping: false, port: 0 });
    const c = lazyConnection(server.address);
    try {
      expect(await codeOf(c.workflowService.listWorkflowExecutions({ namespace: 'default' }))).toBe(0);
    } finally {
      await c.close();
      await server.close();
    }
  });
});

describe('--auth-token-file', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'engine-auth-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
      const s = createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const address = s.address();
        s.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
  }

  function launch(args: string[], env: NodeJS.ProcessEnv = {}) {
    const child = spawn(DEVSERVER, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    return { child, output: () => output };
  }

  it('requires the token of the file on every call of the launched server', async () => {
    const file = path.join(dir, 'token');
    await writeFile(file, `${TOKEN}\n`, { mode: 0o600 });
    const port = await freePort();
    const address = `127.0.0.1:${port}`;
    const { child } = launch([
      'server',
      'start-dev',
      '--port',
      String(port),
      '--ip',
      '127.0.0.1',
      '--headless',
      '--auth-token-file',
      file,
    ]);
    try {
      const good = lazyConnection(address, `Bearer ${TOKEN}`);
      const bad = lazyConnection(address, 'Bearer not-the-token-at-all-0000');
      try {
        // the launch takes a moment: wait for the health check, which needs no token
        const deadline = Date.now() + 60_000;
        for (;;) {
          try {
            await good.withDeadline(Date.now() + 2_000, () => good.healthService.check({}));
            break;
          } catch (err) {
            if (Date.now() > deadline) throw err;
            await new Promise((r) => setTimeout(r, 250));
          }
        }
        expect(await codeOf(good.workflowService.listWorkflowExecutions({ namespace: 'default' }))).toBe(0);
        expect(await codeOf(bad.workflowService.listWorkflowExecutions({ namespace: 'default' }))).toBe(UNAUTHENTICATED);
        expect(await codeOf(lazyConnection(address).workflowService.getSystemInfo({}))).toBe(UNAUTHENTICATED);
      } finally {
        await good.close();
        await bad.close();
      }
    } finally {
      child.kill('SIGKILL');
    }
  });

  for (const [what, contents, message] of [
    ['a missing file', undefined, /cannot read --auth-token-file .*: ENOENT/],
    ['an empty file', '\n', /at least 16 characters/],
    ['a short token', 'shh-a-secret\n', /at least 16 characters/],
  ] as const) {
    it(`does not start with ${what}, and never prints the file's content`, async () => {
      const file = path.join(dir, `bad-${randomUUID()}`);
      if (contents !== undefined) await writeFile(file, contents, { mode: 0o600 });
      const { child, output } = launch(['server', 'start-dev', '--port', String(await freePort()), '--auth-token-file', file]);
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(code).toBe(2);
      expect(output()).toMatch(message);
      if (contents?.trim()) expect(output()).not.toContain(contents.trim());
    });
  }
});
