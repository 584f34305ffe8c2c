// The embedded engine's credential, on the stack `npm start` runs in sandbox mode (the engine started by
// startConfiguredEngine under a temporary DATA_DIR, paygate's client, worker and sandbox clock): a plain
// @temporalio/client without the token, or with a wrong one, is refused UNAUTHENTICATED — listing, starting,
// signalling, the TestService clock — and changes nothing; paygate's own connections present the token and run a
// reserve end to end through the clock; the token file is 0600 and the same across restarts; ENGINE_TOKEN replaces it.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { type InternalConnectionOptions, InternalConnectionOptionsSymbol } from '@temporalio/client/lib/connection.js';
import { msToTs } from '@temporalio/common/lib/time.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConfiguredEngine } from '../../src/composition/index.js';
import { ENGINE_TOKEN_FILE } from '../../src/platform/config/engine-token.js';
import { parseConfig } from '../../src/platform/config/index.js';
import { temporalTransportOptions } from '../../src/platform/temporal/transport.js';
import { adminClock, openSandboxClockStack, type SandboxClockStack } from '../helpers/sandbox-clock-stack.js';
import { keyInClient } from '../payments/key-in-fixtures.js';

const UNAUTHENTICATED = 16;
const DAY_S = 24 * 3600;

/** A plain SDK connection (with the TestService stub) that calls nothing at connect; `authorization` as given. */
function plainConnection(address: string, authorization?: string): Connection {
  const options: InternalConnectionOptions = {
    address,
    ...(authorization !== undefined ? { metadata: { authorization } } : {}),
    [InternalConnectionOptionsSymbol]: { supportsTestService: true },
  };
  return Connection.lazy(options);
}

async function codeOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 0;
  } catch (err) {
    return (err as { code?: number }).code ?? -1;
  }
}

const octal = (mode: number) => (mode & 0o777).toString(8).padStart(4, '0');

describe('the embedded engine requires its token', () => {
  let stack: SandboxClockStack;
  const connections: Connection[] = [];

  beforeAll(async () => {
    stack = await openSandboxClockStack('engine-credential');
  }, 120_000);
  afterAll(async () => {
    for (const c of connections) await c.close().catch(() => undefined);
    await stack?.close();
  });

  it('generates the token once into DATA_DIR/engine-token, owner-only', async () => {
    const file = path.join(stack.dataDir, ENGINE_TOKEN_FILE);
    expect(octal((await stat(file)).mode)).toBe('0600');
    const token = (await readFile(file, 'utf8')).trim();
    expect(token.length).toBeGreaterThanOrEqual(32);
    expect(stack.engine.transport).toEqual({ engineToken: token });
  });

  it('refuses a plain client without the token already at connect', async () => {
    const err = await Connection.connect({ address: stack.engine.address, connectTimeout: '10 seconds' }).then(
      (c) => {
        connections.push(c);
        return undefined;
      },
      (e: unknown) => e as { cause?: { code?: number } },
    );
    expect(err?.cause?.code).toBe(UNAUTHENTICATED);
  });

  for (const [what, authorization] of [
    ['no token', undefined],
    ['a wrong token', 'Bearer wrong-token-of-the-right-length-0000000'],
  ] as const) {
    it(`refuses list, start, signal and the TestService clock with ${what}, and nothing changes`, async () => {
      const c = plainConnection(stack.engine.address, authorization);
      connections.push(c);
      const workflowId = `intruder-${randomUUID()}`;
      const before = await stack.clock.read();
      const codes = {
        list: await codeOf(c.workflowService.listWorkflowExecutions({ namespace: 'default' })),
        start: await codeOf(
          c.workflowService.startWorkflowExecution({
            namespace: 'default',
            workflowId,
            workflowType: { name: 'reserveWorkflow' },
            taskQueue: { name: 'paygate' },
            requestId: randomUUID(),
          }),
        ),
        signal: await codeOf(
          c.workflowService.signalWorkflowExecution({
            namespace: 'default',
            workflowExecution: { workflowId },
            signalName: 'cancel',
            requestId: randomUUID(),
          }),
        ),
        poll: await codeOf(c.workflowService.pollActivityTaskQueue({ namespace: 'default', taskQueue: { name: 'paygate' } })),
        clockRead: await codeOf(c.testService!.getCurrentTime({})),
        clockAdvance: await codeOf(c.testService!.sleep({ duration: msToTs(`${30 * DAY_S}s`) })),
      };
      expect(codes).toEqual({
        list: UNAUTHENTICATED,
        start: UNAUTHENTICATED,
        signal: UNAUTHENTICATED,
        poll: UNAUTHENTICATED,
        clockRead: UNAUTHENTICATED,
        clockAdvance: UNAUTHENTICATED,
      });
      // nothing moved: no run by that id (asked with the token), the clock where it was
      const holder = await Connection.connect({
        address: stack.engine.address,
        ...temporalTransportOptions(stack.engine.transport),
      });
      connections.push(holder);
      const { executions } = await holder.workflowService.listWorkflowExecutions({
        namespace: 'default',
        query: `WorkflowId="${workflowId}"`,
      });
      expect(executions).toEqual([]);
      expect((await stack.clock.read()).getTime() - before.getTime()).toBeLessThan(60_000);
    });
  }

  it("paygate's client, worker and sandbox clock present it: a reserve a day ahead is paid after an advance", async () => {
    const { t } = stack;
    const project = await t.createProject();
    const api = keyInClient(t, project);
    const key = await api.issuedKey();
    // the clock's TestService read, with the token
    const now = (await stack.clock.read()).getTime();
    const created = await api.post('/v2/subscribe/payment/reserve', {
      billing_key: key,
      order_id: `cred-${randomUUID()}`,
      order_name: 'Daily plan',
      price: 9_900,
      reserve_execute_at: new Date(now + DAY_S * 1000 - 60_000).toISOString(),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    // the operator's advance (the admin token): the engine's TestService, with the engine token
    await adminClock(t).advance({ seconds: DAY_S });
    const view = await api.get(`/v2/subscribe/payment/reserve/${created.body.reserve_id as string}`);
    expect(view.body.status).toBe('paid');
  }, 90_000);
});

describe('the token across restarts', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'paygate-engine-token-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function listsWith(address: string, authorization: string | undefined): Promise<number> {
    const c = plainConnection(address, authorization);
    try {
      return await codeOf(c.workflowService.listWorkflowExecutions({ namespace: 'default' }));
    } finally {
      await c.close();
    }
  }

  it('a restart on the same DATA_DIR reuses the file: the same token opens the engine, nothing else does', async () => {
    const config = parseConfig({ DATA_DIR: path.join(dir, 'data') });
    const first = await startConfiguredEngine(config);
    const token = first.transport.engineToken!;
    // something in the journal, started by a holder of the token
    const holder = await Connection.connect({ address: first.address, ...temporalTransportOptions(first.transport) });
    await new Client({ connection: holder }).workflow.start('nothing', { taskQueue: 'restart', workflowId: 'kept' });
    await holder.close();
    await first.stop();

    const second = await startConfiguredEngine(config);
    try {
      expect(second.transport.engineToken).toBe(token);
      expect((await readFile(path.join(config.dataDir, ENGINE_TOKEN_FILE), 'utf8')).trim()).toBe(token);
      expect(octal((await stat(path.join(config.dataDir, ENGINE_TOKEN_FILE))).mode)).toBe('0600');
      expect(await listsWith(second.address, `Bearer ${token}`)).toBe(0);
      expect(await listsWith(second.address, undefined)).toBe(UNAUTHENTICATED);
      const again = await Connection.connect({ address: second.address, ...temporalTransportOptions(second.transport) });
      try {
        const described = await new Client({ connection: again }).workflow.getHandle('kept').describe();
        expect(described.workflowId).toBe('kept');
      } finally {
        await again.close();
      }
    } finally {
      await second.stop();
    }
  }, 60_000);

  it('ENGINE_TOKEN replaces the file: the engine takes it and nothing is written', async () => {
    const dataDir = path.join(dir, 'env');
    const engineToken = 'operator-chosen-engine-token-42';
    const engine = await startConfiguredEngine(parseConfig({ DATA_DIR: dataDir, ENGINE_TOKEN: engineToken }));
    try {
      expect(engine.transport).toEqual({ engineToken });
      expect(await listsWith(engine.address, `Bearer ${engineToken}`)).toBe(0);
      expect(await listsWith(engine.address, undefined)).toBe(UNAUTHENTICATED);
      await expect(stat(path.join(dataDir, ENGINE_TOKEN_FILE))).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await engine.stop();
    }
  }, 60_000);

  it('ENGINE_TOKEN shorter than 16 characters is a configuration error naming it', () => {
    expect(() => parseConfig({ ENGINE_TOKEN: 'short' })).toThrow(/ENGINE_TOKEN: must be at least 16 characters/);
  });
});
