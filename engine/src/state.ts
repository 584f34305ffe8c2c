// The serialisable state of one workflow run. Everything here survives a restart through the journal;
// runtime-only things (timer handles, waiting callers) live beside it in the engine.
import type { StateCursor } from './journal-delta.js';
import type { Failure, HistoryEvent, Memo, Payloads, Plain, RetryPolicy, SearchAttributes, temporal } from './proto.js';

export interface RetrySpec {
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
  maximumAttempts: number;
  nonRetryableErrorTypes: string[];
}

export interface ActivityState {
  scheduledEventId: number;
  activityId: string;
  activityType: string;
  taskQueue: string;
  phase: 'scheduled' | 'started' | 'backoff';
  attempt: number;
  scheduledTime: number;
  attemptScheduledTime: number;
  startedTime: number;
  startedIdentity: string;
  heartbeatDetails: Payloads | null;
  lastHeartbeatTime: number;
  cancelRequested: boolean;
  cancelRequestedEventId: number;
  lastFailure: Failure | null;
  scheduleToCloseMs: number;
  scheduleToStartMs: number;
  startToCloseMs: number;
  heartbeatMs: number;
  retry: RetrySpec;
  retryPolicy: RetryPolicy;
}

export interface WorkflowTaskState {
  phase: 'none' | 'scheduled' | 'started';
  scheduledEventId: number;
  startedEventId: number;
  attempt: number;
  queue: string;
  sticky: boolean;
  scheduledTime: number;
  startedTime: number;
  /** History length before a workflow task that exists only to deliver updates (rolled back if they are all rejected). */
  speculativeFrom: number | null;
}

export interface UpdateState {
  updateId: string;
  /** `aborted`: the run closed before the worker accepted it (`abortedBy` says whether a next run carries on). */
  phase: 'admitted' | 'delivered' | 'accepted' | 'completed' | 'rejected' | 'aborted';
  request: Plain<temporal.api.update.v1.IRequest>;
  acceptedEventId: number;
  outcome: Plain<temporal.api.update.v1.IOutcome> | null;
  abortedBy?: 'closing' | 'continuing';
}

export interface ChildState {
  initiatedEventId: number;
  startedEventId: number;
  namespace: string;
  workflowId: string;
  runId: string;
  workflowType: string;
  parentClosePolicy: number;
}

export interface ParentRef {
  namespace: string;
  workflowId: string;
  runId: string;
  initiatedEventId: number;
}

/** A group of events to append together; `linkStarted` makes the last event reference the first one's id. */
export interface BufferedGroup {
  events: HistoryEvent[];
  linkStarted: boolean;
}

export interface ExecutionState {
  namespace: string;
  workflowId: string;
  runId: string;
  firstRunId: string;
  workflowType: string;
  taskQueue: string;
  status: number;
  startTime: number;
  executionTime: number;
  closeTime: number;
  workflowTaskTimeoutMs: number;
  runTimeoutMs: number;
  executionTimeoutMs: number;
  executionExpirationTime: number;
  memo: Memo | null;
  searchAttributes: SearchAttributes | null;
  parent: ParentRef | null;
  retryPolicy: RetryPolicy | null;
  attempt: number;
  requestIds: string[];
  signalRequestIds: string[];
  wft: WorkflowTaskState;
  /** Started event id of the last completed workflow task (what a sticky worker has already seen). */
  lastCompletedStartedEventId: number;
  lastWftCompletedEventId: number;
  sticky: { queue: string; scheduleToStartMs: number } | null;
  buffered: BufferedGroup[];
  activities: Record<string, ActivityState>;
  timers: Record<string, { startedEventId: number; fireAt: number }>;
  children: Record<string, ChildState>;
  updates: Record<string, UpdateState>;
  /** Named deadlines on the engine clock (timer:<id>, act:<scheduledId>:<kind>, wft, run, execution, backoff). */
  deadlines: Record<string, number>;
  cancelRequested: boolean;
  continuedAsNewRunId: string;
  stateTransitions: number;
  /** The run's priority (start request, or the parent's merged with the child command's); absent before it was kept. */
  priority?: Priority | null;
  /** Values of the `BuildIds` search attribute, kept up to date as workflow tasks complete. */
  buildIds?: string[];
  /** What the last completed workflow task said about its worker's version (worker versioning / deployments). */
  workerVersion?: WorkerVersionInfo | null;
}

export type Priority = Plain<temporal.api.common.v1.IPriority>;

export interface WorkerVersionInfo {
  stamp: Plain<temporal.api.common.v1.IWorkerVersionStamp> | null;
  deploymentName: string;
  deploymentVersion: Plain<temporal.api.deployment.v1.IWorkerDeploymentVersion> | null;
  /** VersioningBehavior of the workflow as that task reported it (UNSPECIFIED when the worker is unversioned). */
  behavior: number;
}

export interface Execution {
  s: ExecutionState;
  history: HistoryEvent[];
  /** History length already in the journal (everything after it goes out with the next commit). */
  persistedLength: number;
  /** How many events of the history are counted in its size, and their encoded bytes (core.ts `historySizeBytes`). */
  sized?: { events: number; bytes: number };
  /** What the journal holds of the state, so the next line carries only the difference (journal-delta.ts). */
  cursor?: StateCursor;
  /** The history limits' warnings already logged for this run (limits.ts), so each is logged once. */
  warned?: { count?: boolean; size?: boolean };
  /** Set when the run was terminated for passing a history limit: the reason (Temporal's failure message). */
  limitReason?: string;
}

export const execKey = (namespace: string, runId: string) => `${namespace}/${runId}`;
