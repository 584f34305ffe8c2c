// Read-mostly RPCs about the server and its runs: DescribeWorkflowExecution and the visibility view of a run,
// GetSystemInfo, namespaces (describe / list / register), DescribeTaskQueue, and registering search attributes.
import { historySizeBytes, type EngineCore, type Rpc } from './core.js';
import { Code, RpcError, invalid } from './errors.js';
import { durationMs, enums, msDuration, msTs, type temporal, type Plain, type SearchAttributes } from './proto.js';
import type { ActivityState, Execution } from './state.js';
import { namespaceId } from './tokens.js';

/** The visibility/describe view of a run. */
export function executionInfo(ex: Execution): Plain<temporal.api.workflow.v1.IWorkflowExecutionInfo> {
  const s = ex.s;
  const root = ex.history[0]?.workflowExecutionStartedEventAttributes?.rootWorkflowExecution;
  const version = s.workerVersion;
  return {
    execution: { workflowId: s.workflowId, runId: s.runId },
    type: { name: s.workflowType },
    startTime: msTs(s.startTime),
    closeTime: s.closeTime ? msTs(s.closeTime) : undefined,
    status: s.status,
    historyLength: ex.history.length,
    executionTime: msTs(s.executionTime),
    memo: s.memo ?? { fields: {} },
    searchAttributes: withBuildIds(s.searchAttributes, s.buildIds),
    taskQueue: s.taskQueue,
    parentNamespaceId: s.parent?.namespace,
    parentExecution: s.parent ? { workflowId: s.parent.workflowId, runId: s.parent.runId } : undefined,
    // A run without a parent is the root of its tree (its started event names no root).
    rootExecution: root ?? { workflowId: s.workflowId, runId: s.runId },
    firstRunId: s.firstRunId,
    stateTransitionCount: s.stateTransitions,
    executionDuration: s.closeTime ? msDuration(s.closeTime - s.executionTime) : undefined,
    historySizeBytes: historySizeBytes(ex),
    priority: s.priority ?? undefined,
    mostRecentWorkerVersionStamp: version?.stamp ?? undefined,
    workerDeploymentName: version?.deploymentName || undefined,
    versioningInfo: version?.behavior ? { behavior: version.behavior, deploymentVersion: version.deploymentVersion } : undefined,
  };
}

/** The run's search attributes with the `BuildIds` the server maintains (a KeywordList, as Temporal encodes it). */
function withBuildIds(sa: SearchAttributes | null, buildIds: string[] | undefined): SearchAttributes {
  if (!buildIds?.length) return sa ?? { indexedFields: {} };
  const payload = {
    metadata: { encoding: Buffer.from('json/plain'), type: Buffer.from('KeywordList') },
    data: Buffer.from(JSON.stringify(buildIds)),
  };
  return { indexedFields: { ...sa?.indexedFields, BuildIds: payload } };
}

export const describeWorkflowExecution: Rpc<'DescribeWorkflowExecution'> = async (core, r) => {
  const ex = core.findRun(core.ns(r.namespace), r.execution);
  const s = ex.s;
  return {
    executionConfig: {
      taskQueue: { name: s.taskQueue, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      workflowExecutionTimeout: s.executionTimeoutMs ? msDuration(s.executionTimeoutMs) : undefined,
      workflowRunTimeout: s.runTimeoutMs ? msDuration(s.runTimeoutMs) : undefined,
      defaultWorkflowTaskTimeout: msDuration(s.workflowTaskTimeoutMs),
      // Static summary / details given at start, as the started event carries them.
      userMetadata: ex.history[0]?.userMetadata,
    },
    workflowExecutionInfo: executionInfo(ex),
    pendingActivities: Object.values(s.activities).map(pendingActivityInfo),
    pendingChildren: Object.values(s.children).map((c) => ({
      workflowId: c.workflowId,
      runId: c.runId,
      workflowTypeName: c.workflowType,
      initiatedId: c.initiatedEventId,
      parentClosePolicy: c.parentClosePolicy,
    })),
    pendingWorkflowTask:
      s.wft.phase === 'none'
        ? undefined
        : {
            state:
              s.wft.phase === 'started'
                ? enums.PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED
                : enums.PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED,
            scheduledTime: msTs(s.wft.scheduledTime),
            startedTime: s.wft.startedTime ? msTs(s.wft.startedTime) : undefined,
            attempt: s.wft.attempt,
          },
  };
};

function pendingActivityInfo(a: ActivityState): Plain<temporal.api.workflow.v1.IPendingActivityInfo> {
  const A = enums.PendingActivityState;
  return {
    activityId: a.activityId,
    activityType: { name: a.activityType },
    state: a.cancelRequested
      ? A.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED
      : a.phase === 'started'
        ? A.PENDING_ACTIVITY_STATE_STARTED
        : A.PENDING_ACTIVITY_STATE_SCHEDULED,
    heartbeatDetails: a.heartbeatDetails,
    lastHeartbeatTime: a.lastHeartbeatTime ? msTs(a.lastHeartbeatTime) : undefined,
    lastStartedTime: a.startedTime ? msTs(a.startedTime) : undefined,
    attempt: a.attempt,
    maximumAttempts: a.retry.maximumAttempts,
    scheduledTime: msTs(a.attemptScheduledTime),
    expirationTime: a.scheduleToCloseMs ? msTs(a.scheduledTime + a.scheduleToCloseMs) : undefined,
    lastFailure: a.lastFailure,
    lastWorkerIdentity: a.startedIdentity,
  };
}

export const getSystemInfo: Rpc<'GetSystemInfo'> = async () => ({
  serverVersion: '1.24.0-paygate-devserver',
  capabilities: {
    signalAndQueryHeader: true,
    internalErrorDifferentiation: true,
    activityFailureIncludeHeartbeat: true,
    encodedFailureAttributes: true,
    sdkMetadata: true,
    upsertMemo: true,
    eagerWorkflowStart: true,
    // Workers then stamp completions with their build id (recorded in history and in the BuildIds search attribute).
    buildIdBasedVersioning: true,
  },
});

export const describeNamespace: Rpc<'DescribeNamespace'> = async (core, r) => {
  const name = core.ns(r.namespace);
  return {
    namespaceInfo: {
      name,
      state: enums.NamespaceState.NAMESPACE_STATE_REGISTERED,
      id: namespaceId(name),
      capabilities: { eagerWorkflowStart: true, syncUpdate: true, asyncUpdate: true },
      // What the SDKs check payloads against before sending them (Temporal reports its dynamic config here).
      limits: {
        blobSizeLimitError: core.dynamicConfig.blobSizeLimitError,
        memoSizeLimitError: core.dynamicConfig.memoSizeLimitError,
      },
    },
    config: { workflowExecutionRetentionTtl: msDuration(core.retentionOf(name)) },
    isGlobalNamespace: false,
  };
};

export const listNamespaces: Rpc<'ListNamespaces'> = async (core, _r, onCancel) => {
  const out = [];
  for (const n of core.namespaces) out.push(await describeNamespace(core, { namespace: n }, onCancel));
  return { namespaces: out };
};

export const registerNamespace: Rpc<'RegisterNamespace'> = async (core, r) => {
  if (!r.namespace) throw invalid('namespace is required');
  if (core.namespaces.has(r.namespace)) throw new RpcError(Code.ALREADY_EXISTS, `namespace ${r.namespace} already exists`);
  core.namespaces.add(r.namespace);
  const retentionMs = durationMs(r.workflowExecutionRetentionPeriod);
  if (retentionMs > 0) core.namespaceRetentionMs.set(r.namespace, retentionMs);
  core.markServerDirty();
  await core.commit();
  return {};
};

export const describeTaskQueue: Rpc<'DescribeTaskQueue'> = async (core, r) => {
  core.ns(r.namespace);
  return { pollers: [] };
};

/** Registers search attribute types; durable (journaled) before it resolves. */
export async function addSearchAttributes(core: EngineCore, attrs: Record<string, string>): Promise<void> {
  for (const [k, v] of Object.entries(attrs)) core.saTypes.set(k, v);
  core.markServerDirty();
  await core.commit();
}
