// The errors clients tell apart by what the server answers: an unknown namespace (NamespaceNotFoundFailure in the
// status details, Temporal's wording) on every kind of call; a task token in Temporal's own format for an activity
// that does not exist (NOT_FOUND -> ActivityNotFoundError) versus bytes that are no token (INVALID_ARGUMENT); and,
// engine only, UNIMPLEMENTED naming the feature for RPCs of features the engine does not have.
import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  ActivityCompletionError,
  ActivityNotFoundError,
  Client,
  NamespaceNotFoundError,
  isGrpcServiceError,
  type Connection,
} from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { againstRealServer, createEnv, excludedAgainstRealServer, namespaceOf, uniqueId } from './env.js';

const MISSING = 'no-such-namespace';

/**
 * A task token as Temporal's server serialises one (temporal.server.api.token.v1.Task): namespace id, workflow id,
 * run id, scheduled event id, attempt, activity id, activity type — for an activity that never existed.
 */
function temporalTaskToken(namespaceId: string): Uint8Array {
  const str = (field: number, value: string) => {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([Buffer.from([(field << 3) | 2, bytes.length]), bytes]);
  };
  const int = (field: number, value: number) => Buffer.from([field << 3, value]);
  return Buffer.concat([
    str(1, namespaceId),
    str(2, uniqueId('wf').slice(0, 36)),
    str(3, '33fe12c8-be49-41a2-8abd-1765496ede9e'),
    int(4, 5),
    int(5, 1),
    str(6, '1'),
    str(8, 'completeAsync'),
  ]);
}

async function grpcErrorOf(promise: Promise<unknown>): Promise<{ code: number; details: string } | undefined> {
  try {
    await promise;
    return undefined;
  } catch (err) {
    const grpc = isGrpcServiceError(err) ? err : err instanceof Error && isGrpcServiceError(err.cause) ? err.cause : undefined;
    if (!grpc) throw err;
    return { code: grpc.code, details: grpc.details };
  }
}

describe('server errors', () => {
  let env: TestWorkflowEnvironment;
  let connection: Connection;
  let missingNamespace: Client;

  beforeAll(async () => {
    env = await createEnv('dev-server');
    connection = env.connection;
    missingNamespace = new Client({ connection, namespace: MISSING });
  });

  afterAll(async () => {
    await env?.teardown();
  });

  describe('unknown namespace', () => {
    it('starting a workflow throws NamespaceNotFoundError with the namespace', async () => {
      const err = await missingNamespace.workflow
        .start('anything', { workflowId: uniqueId('wf'), taskQueue: 'tq' })
        .catch((e) => e);
      expect(err).toBeInstanceOf(NamespaceNotFoundError);
      expect(err.message).toBe(`Namespace not found: '${MISSING}'`);
      expect((err as NamespaceNotFoundError).namespace).toBe(MISSING);
    });

    it('through a NativeConnection (the Core SDK) too', async () => {
      const client = new Client({ connection: env.nativeConnection, namespace: MISSING });
      const err = await client.workflow.start('anything', { workflowId: uniqueId('wf'), taskQueue: 'tq' }).catch((e) => e);
      expect(err).toBeInstanceOf(NamespaceNotFoundError);
      expect((err as NamespaceNotFoundError).namespace).toBe(MISSING);
    });

    it('listing workflows throws NamespaceNotFoundError', async () => {
      const err = await missingNamespace.workflow
        .list()
        [Symbol.asyncIterator]()
        .next()
        .catch((e) => e);
      expect(err).toBeInstanceOf(NamespaceNotFoundError);
    });

    it('completing an activity throws NamespaceNotFoundError before the token is even read', async () => {
      const err = await missingNamespace.activity.complete(new Uint8Array([1]), 'result').catch((e) => e);
      expect(err).toBeInstanceOf(NamespaceNotFoundError);
      expect(err.message).toBe(`Namespace not found: '${MISSING}'`);
    });

    it('creating and listing schedules throw NamespaceNotFoundError (the namespace is checked first)', async () => {
      const created = await missingNamespace.schedule
        .create({
          scheduleId: uniqueId('schedule'),
          spec: { intervals: [{ every: '1 hour' }] },
          action: { type: 'startWorkflow', workflowType: 'anything', taskQueue: 'tq' },
        })
        .catch((e) => e);
      expect(created).toBeInstanceOf(NamespaceNotFoundError);
      const listed = await missingNamespace.schedule
        .list()
        [Symbol.asyncIterator]()
        .next()
        .catch((e) => e);
      expect(listed).toBeInstanceOf(NamespaceNotFoundError);
    });

    it("answers NOT_FOUND with Temporal's wording on raw calls", async () => {
      const svc = connection.workflowService;
      for (const call of [
        svc.describeWorkflowExecution({ namespace: MISSING, execution: { workflowId: 'x' } }),
        svc.signalWorkflowExecution({ namespace: MISSING, workflowExecution: { workflowId: 'x' }, signalName: 's' }),
        svc.describeNamespace({ namespace: MISSING }),
        svc.countWorkflowExecutions({ namespace: MISSING }),
      ]) {
        expect(await grpcErrorOf(call)).toEqual({ code: GrpcStatus.NOT_FOUND, details: `Namespace ${MISSING} is not found.` });
      }
    });
  });

  describe('task tokens', () => {
    let token: Uint8Array;
    let client: Client;

    beforeAll(async () => {
      const namespace = namespaceOf(env);
      const { namespaceInfo } = await connection.workflowService.describeNamespace({ namespace });
      expect(namespaceInfo?.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      token = temporalTaskToken(namespaceInfo!.id!);
      client = new Client({ connection, namespace });
    });

    it('completing, failing, cancelling or heartbeating a missing activity by Temporal-format token throws ActivityNotFoundError', async () => {
      await expect(client.activity.complete(token, 'done')).rejects.toBeInstanceOf(ActivityNotFoundError);
      await expect(client.activity.fail(token, new Error('failed'))).rejects.toBeInstanceOf(ActivityNotFoundError);
      await expect(client.activity.reportCancellation(token, 'cancelled')).rejects.toBeInstanceOf(ActivityNotFoundError);
      await expect(client.activity.heartbeat(token, 'details')).rejects.toBeInstanceOf(ActivityNotFoundError);
    });

    it('the same by workflow id and activity id', async () => {
      const id = { workflowId: uniqueId('wf'), activityId: '1' };
      await expect(client.activity.complete(id, 'done')).rejects.toBeInstanceOf(ActivityNotFoundError);
      await expect(client.activity.fail(id, new Error('failed'))).rejects.toBeInstanceOf(ActivityNotFoundError);
      await expect(client.activity.reportCancellation(id, 'cancelled')).rejects.toBeInstanceOf(ActivityNotFoundError);
      await expect(client.activity.heartbeat(id, 'details')).rejects.toBeInstanceOf(ActivityNotFoundError);
    });

    it('a Temporal-format token naming a namespace id the server does not have is NamespaceNotFoundError', async () => {
      const foreign = temporalTaskToken('4eb0f184-e031-44fa-8b0c-f027d055bedc');
      await expect(client.activity.complete(foreign, 'done')).rejects.toBeInstanceOf(NamespaceNotFoundError);
    });

    it('bytes that are no task token are refused as INVALID_ARGUMENT, not NOT_FOUND', async () => {
      const err = await client.activity.complete(new Uint8Array([1]), 'done').catch((e) => e);
      expect(err).toBeInstanceOf(ActivityCompletionError);
      expect(err).not.toBeInstanceOf(ActivityNotFoundError);
      const raw = await grpcErrorOf(
        connection.workflowService.respondActivityTaskCompleted({ namespace: namespaceOf(env), taskToken: new Uint8Array([1]) }),
      );
      expect(raw?.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    });
  });

  if (againstRealServer) {
    excludedAgainstRealServer('the UNIMPLEMENTED checks in server-errors.test.ts', 'a real server implements schedules');
  } else {
    describe('features the engine does not have', () => {
      it('answers UNIMPLEMENTED naming the feature through the SDK clients', async () => {
        const client = new Client({ connection, namespace: namespaceOf(env) });
        const err = await client.schedule
          .create({
            scheduleId: uniqueId('schedule'),
            spec: { intervals: [{ every: '1 hour' }] },
            action: { type: 'startWorkflow', workflowType: 'anything', taskQueue: 'tq' },
          })
          .catch((e) => e);
        const grpc = isGrpcServiceError(err) ? err : (err as Error).cause;
        expect(isGrpcServiceError(grpc)).toBe(true);
        expect(grpc).toMatchObject({
          code: GrpcStatus.UNIMPLEMENTED,
          details: 'Schedules are not implemented by temporal-devserver (CreateSchedule)',
        });
      });

      it('answers every WorkflowService RPC outside its feature set with UNIMPLEMENTED and a message', async () => {
        const svc = connection.workflowService;
        const namespace = namespaceOf(env);
        const cases: Array<[Promise<unknown>, RegExp]> = [
          [svc.startBatchOperation({ namespace, jobId: uniqueId('batch') }), /^Batch operations are not implemented/],
          [svc.pauseActivity({ namespace }), /^Activity pause, unpause, reset and options updates are not implemented/],
          [svc.describeWorkerDeployment({ namespace }), /^Worker deployments are not implemented/],
          [svc.getWorkerVersioningRules({ namespace }), /^Worker versioning .* is not implemented/],
          [svc.listActivityExecutions({ namespace }), /^Standalone activities are not implemented/],
          [svc.resetWorkflowExecution({ namespace }), /^Workflow reset is not implemented/],
          [svc.updateNamespace({ namespace }), /not implemented by temporal-devserver \(UpdateNamespace\)$/],
        ];
        for (const [call, message] of cases) {
          const err = await grpcErrorOf(call);
          expect(err?.code).toBe(GrpcStatus.UNIMPLEMENTED);
          expect(err?.details).toMatch(message);
        }
      });
    });
  }
});
