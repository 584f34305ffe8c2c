// GetSystemInfo / DescribeNamespace capabilities, sdk metadata, UNIMPLEMENTED for unknown RPCs, and the
// real-clock dev-server mode that TestWorkflowEnvironment.createLocal launches.
import { status as GrpcStatus } from '@grpc/grpc-js';
import { isGrpcServiceError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from './activities.js';
import {
  againstRealServer,
  createEnv,
  DEVSERVER_PATH,
  excludedAgainstRealServer,
  historyEvents,
  INT_KEY,
  KEYWORD_KEY,
  namespaceOf,
  uniqueId,
  withWorker,
} from './env.js';
import { activityAndTimer, finishSignal, pushSignal, returnValue, signalCollector } from './workflows.js';

const { EventType, NamespaceState } = temporal.api.enums.v1;

/** Capabilities the suite proves; the engine may advertise nothing else. */
const PROVEN_SYSTEM_CAPABILITIES = [
  'signalAndQueryHeader',
  'internalErrorDifferentiation',
  'activityFailureIncludeHeartbeat',
  'encodedFailureAttributes',
  'sdkMetadata',
  'upsertMemo',
  'eagerWorkflowStart',
  'buildIdBasedVersioning',
] as const;
const REQUIRED_SYSTEM_CAPABILITIES = [
  'signalAndQueryHeader',
  'internalErrorDifferentiation',
  'activityFailureIncludeHeartbeat',
  'encodedFailureAttributes',
  'sdkMetadata',
] as const;
const PROVEN_NAMESPACE_CAPABILITIES = ['syncUpdate', 'asyncUpdate', 'eagerWorkflowStart'] as const;

function advertised(capabilities: object | null | undefined): string[] {
  return Object.entries(capabilities ?? {})
    .filter(([, value]) => value === true)
    .map(([name]) => name)
    .sort();
}

async function grpcCodeOf(promise: Promise<unknown>): Promise<number | undefined> {
  try {
    await promise;
    return undefined;
  } catch (err) {
    if (isGrpcServiceError(err)) return err.code;
    if (err instanceof Error && isGrpcServiceError(err.cause)) return err.cause.code;
    throw err;
  }
}

const activities = createActivities();

describe('time-skipping server', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await createEnv('time-skipping');
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('advertises the capabilities the SDK relies on in GetSystemInfo', async () => {
    const { capabilities, serverVersion } = await env.connection.workflowService.getSystemInfo({});
    expect(typeof serverVersion).toBe('string');
    for (const name of REQUIRED_SYSTEM_CAPABILITIES) expect(capabilities?.[name], name).toBe(true);
    if (!againstRealServer) {
      const unproven = advertised(capabilities).filter(
        (name) => !(PROVEN_SYSTEM_CAPABILITIES as readonly string[]).includes(name),
      );
      expect(unproven, 'capabilities advertised but not covered by the suite').toEqual([]);
    }
  });

  it('describes its namespace as registered, advertising only proven namespace capabilities', async () => {
    const response = await env.connection.workflowService.describeNamespace({ namespace: namespaceOf(env) });
    expect(response.namespaceInfo?.name).toBe(namespaceOf(env));
    expect(response.namespaceInfo?.state).toBe(NamespaceState.NAMESPACE_STATE_REGISTERED);
    if (!againstRealServer) {
      const unproven = advertised(response.namespaceInfo?.capabilities).filter(
        (name) => !(PROVEN_NAMESPACE_CAPABILITIES as readonly string[]).includes(name),
      );
      expect(unproven, 'namespace capabilities advertised but not covered by the suite').toEqual([]);
    }
  });

  it('answers DescribeNamespace for an unknown namespace with NOT_FOUND', async () => {
    expect(await grpcCodeOf(env.connection.workflowService.describeNamespace({ namespace: uniqueId('no-such-namespace') }))).toBe(
      GrpcStatus.NOT_FOUND,
    );
  });

  it('stores the sdk metadata of workflow task completions in the history', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(activityAndTimer, {
        taskQueue,
        workflowId: uniqueId('sdk-metadata'),
        args: [10],
      });
      expect(await handle.result()).toBe('bench');
      const completions = (await historyEvents(handle)).filter(
        (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      );
      const metadata = completions.map((e) => e.workflowTaskCompletedEventAttributes?.sdkMetadata);
      const flagsUsed = metadata.flatMap((m) => [...(m?.coreUsedFlags ?? []), ...(m?.langUsedFlags ?? [])]);
      expect(flagsUsed.length + metadata.filter((m) => m?.sdkName).length).toBeGreaterThan(0);
    });
  });

  if (againstRealServer) {
    excludedAgainstRealServer('the UNIMPLEMENTED check in system.test.ts', 'a real server implements batch operations');
  } else {
    it('answers an RPC it does not implement with UNIMPLEMENTED', async () => {
      expect(
        await grpcCodeOf(
          env.connection.workflowService.startBatchOperation({
            namespace: namespaceOf(env),
            jobId: uniqueId('batch'),
            reason: 'conformance',
            visibilityQuery: 'WorkflowType = "nothing"',
            terminationOperation: {},
          }),
        ),
      ).toBe(GrpcStatus.UNIMPLEMENTED);
    });
  }
});

describe('dev-server mode (TestWorkflowEnvironment.createLocal)', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await createEnv('dev-server');
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('runs on the real clock without a TestService', async () => {
    expect(env.supportsTimeSkipping).toBe(false);
    const testService = env.connection.testService;
    if (testService !== undefined) {
      expect(await grpcCodeOf(testService.getCurrentTime({}))).toBe(GrpcStatus.UNIMPLEMENTED);
    }
  });

  it('runs a workflow with an activity, a timer and signals, with the registered search attributes', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const started = Date.now();
      const result = await env.client.workflow.execute(activityAndTimer, {
        taskQueue,
        workflowId: uniqueId('dev-server'),
        args: [300],
        typedSearchAttributes: [
          { key: KEYWORD_KEY, value: 'dev' },
          { key: INT_KEY, value: 3 },
        ],
      });
      expect(result).toBe('bench');
      // Real clock: the 300 ms timer took real time.
      expect(Date.now() - started).toBeGreaterThanOrEqual(300);

      const handle = await env.client.workflow.start(signalCollector, {
        taskQueue,
        workflowId: uniqueId('dev-server-signals'),
        typedSearchAttributes: [{ key: INT_KEY, value: 42 }],
      });
      await handle.signal(pushSignal, 'real clock');
      await handle.signal(finishSignal);
      expect(await handle.result()).toEqual(['real clock']);
      expect((await handle.describe()).typedSearchAttributes.get(INT_KEY)).toBe(42);
    });
  });
});

// Launches bin/temporal-devserver itself, so it runs even when TEMPORAL_ADDRESS is set.
describe('bin/temporal-devserver command line', () => {
  it('accepts every flag createLocal may pass, including unknown ones, and serves the given namespace', async () => {
    const env = await TestWorkflowEnvironment.createLocal({
      server: {
        executable: { type: 'existing-path', path: DEVSERVER_PATH },
        namespace: 'conformance-ns',
        ip: '127.0.0.1',
        ui: false,
        log: { format: 'json', level: 'error' },
        extraArgs: [
          '--dynamic-config-value',
          'frontend.enableUpdateWorkflowExecution=true',
          '--dynamic-config-value',
          'system.forceSearchAttributesCacheRefreshOnRead=true',
          '--headless',
          '--flag-no-server-knows',
          'some-value',
        ],
      },
    });
    try {
      expect(env.namespace).toBe('conformance-ns');
      const described = await env.connection.workflowService.describeNamespace({ namespace: 'conformance-ns' });
      expect(described.namespaceInfo?.name).toBe('conformance-ns');
      await withWorker(env, { activities }, async (taskQueue) => {
        expect(
          await env.client.workflow.execute(returnValue<string>, { taskQueue, workflowId: uniqueId('flags'), args: ['served'] }),
        ).toBe('served');
      });
    } finally {
      await env.teardown();
    }
  });
});
