// The workflow execution state machine behind WorkflowService: the table of the RPCs it serves (each handled by
// a concern module over one shared EngineCore, core.ts) and the `Engine` the server, the visibility and the
// operator services hold. Every RPC handler mutates executions synchronously and then awaits `commit()`,
// which journals the changed runs (when durable) before the caller gets its answer.
import {
  pollActivityTaskQueue,
  recordActivityTaskHeartbeat,
  recordActivityTaskHeartbeatById,
  respondActivityTaskCanceled,
  respondActivityTaskCanceledById,
  respondActivityTaskCompleted,
  respondActivityTaskCompletedById,
  respondActivityTaskFailed,
  respondActivityTaskFailedById,
} from './activity-tasks.js';
import type { Clock } from './clock.js';
import { EngineCore, type EngineOptions, type OnCancel, type Rpc, type RpcName } from './core.js';
import { onDeadline } from './deadlines.js';
import {
  addSearchAttributes,
  describeNamespace,
  describeTaskQueue,
  describeWorkflowExecution,
  executionInfo,
  getSystemInfo,
  listNamespaces,
  registerNamespace,
} from './describe.js';
import { getWorkflowExecutionHistory, getWorkflowExecutionHistoryReverse } from './history.js';
import { requestCancelWorkflowExecution, terminateWorkflowExecution } from './lifecycle.js';
import { invalid, namespaceNotFound } from './errors.js';
import { REQUEST_LIMITS, RUN_CHANGING_RPCS, checkHistoryLimits, openRunOfRequest } from './limits.js';
import { executeMultiOperation } from './multi-operation.js';
import { restore, sweepClosed } from './persistence.js';
import type { temporal, Plain } from './proto.js';
import { queryWorkflow, respondQueryTaskCompleted } from './queries.js';
import { pollWorkflowExecutionUpdate, signalWorkflowExecution, updateWorkflowExecution } from './signals-updates.js';
import { signalWithStartWorkflowExecution, startWorkflowExecution } from './start.js';
import type { Execution } from './state.js';
import { unimplementedHandlers } from './unimplemented.js';
import { respondWorkflowTaskCompleted } from './workflow-task-completion.js';
import { pollWorkflowTaskQueue, resetStickyTaskQueue, respondWorkflowTaskFailed, shutdownWorker } from './workflow-tasks.js';

export type { EngineOptions } from './core.js';

/**
 * The WorkflowService RPCs the engine serves (List / Scan / Count are visibility-service.ts); the rest answer
 * UNIMPLEMENTED naming their feature (unimplemented.ts).
 */
const WORKFLOW_SERVICE: { [M in RpcName]?: Rpc<M> } = {
  // start.ts
  StartWorkflowExecution: startWorkflowExecution,
  SignalWithStartWorkflowExecution: signalWithStartWorkflowExecution,
  // multi-operation.ts
  ExecuteMultiOperation: executeMultiOperation,
  // workflow-tasks.ts, workflow-task-completion.ts
  PollWorkflowTaskQueue: pollWorkflowTaskQueue,
  RespondWorkflowTaskCompleted: respondWorkflowTaskCompleted,
  RespondWorkflowTaskFailed: respondWorkflowTaskFailed,
  ShutdownWorker: shutdownWorker,
  ResetStickyTaskQueue: resetStickyTaskQueue,
  // activity-tasks.ts
  PollActivityTaskQueue: pollActivityTaskQueue,
  RespondActivityTaskCompleted: respondActivityTaskCompleted,
  RespondActivityTaskCompletedById: respondActivityTaskCompletedById,
  RespondActivityTaskFailed: respondActivityTaskFailed,
  RespondActivityTaskFailedById: respondActivityTaskFailedById,
  RespondActivityTaskCanceled: respondActivityTaskCanceled,
  RespondActivityTaskCanceledById: respondActivityTaskCanceledById,
  RecordActivityTaskHeartbeat: recordActivityTaskHeartbeat,
  RecordActivityTaskHeartbeatById: recordActivityTaskHeartbeatById,
  // signals-updates.ts, lifecycle.ts, queries.ts
  SignalWorkflowExecution: signalWorkflowExecution,
  UpdateWorkflowExecution: updateWorkflowExecution,
  PollWorkflowExecutionUpdate: pollWorkflowExecutionUpdate,
  RequestCancelWorkflowExecution: requestCancelWorkflowExecution,
  TerminateWorkflowExecution: terminateWorkflowExecution,
  QueryWorkflow: queryWorkflow,
  RespondQueryTaskCompleted: respondQueryTaskCompleted,
  // history.ts, describe.ts
  GetWorkflowExecutionHistory: getWorkflowExecutionHistory,
  GetWorkflowExecutionHistoryReverse: getWorkflowExecutionHistoryReverse,
  DescribeWorkflowExecution: describeWorkflowExecution,
  GetSystemInfo: getSystemInfo,
  DescribeNamespace: describeNamespace,
  ListNamespaces: listNamespaces,
  RegisterNamespace: registerNamespace,
  DescribeTaskQueue: describeTaskQueue,
};

type Handler = (r: never, onCancel: OnCancel) => Promise<object>;
type RequestCheck = (core: EngineCore, r: never) => void | Promise<void>;

/** A request naming a namespace this server does not have is NamespaceNotFound (an empty one means `default`). */
function knownNamespace(core: EngineCore, r: never): void {
  const namespace = (r as { namespace?: string | null }).namespace;
  if (namespace && !core.namespaces.has(namespace)) throw namespaceNotFound(namespace);
}

/**
 * Runs a request that changes the run it names; when the change made the run pass a history limit (and the run
 * was terminated for it, limits.ts) the caller is answered INVALID_ARGUMENT with the reason, as Temporal answers
 * `ErrHistorySizeExceedsLimit` / `ErrHistoryCountExceedsLimit`.
 */
async function answeringHistoryLimits<T>(core: EngineCore, r: never, run: () => Promise<T>): Promise<T> {
  const ex = openRunOfRequest(core, r);
  if (!ex) return run();
  let res: T;
  try {
    res = await run();
  } catch (err) {
    if (ex.limitReason) throw invalid(ex.limitReason);
    throw err;
  }
  if (ex.limitReason) throw invalid(ex.limitReason);
  return res;
}

export class Engine {
  readonly clock: Clock;
  private readonly core: EngineCore;

  constructor(opts: EngineOptions) {
    this.core = new EngineCore(opts, onDeadline, checkHistoryLimits);
    this.clock = this.core.clock;
  }

  /**
   * The WorkflowService handlers over this engine, by method name (grpc.ts serves them). As on Temporal, a request
   * naming an unknown namespace is NamespaceNotFound before anything else, then the size limits apply (limits.ts).
   */
  workflowService(): Record<string, Handler> {
    const core = this.core;
    const handlers: Record<string, Handler> = {};
    for (const [name, rpc] of Object.entries(WORKFLOW_SERVICE)) {
      const handle = rpc as (core: EngineCore, r: never, onCancel: OnCancel) => Promise<object>;
      const check = REQUEST_LIMITS[name as RpcName] as RequestCheck | undefined;
      // RegisterNamespace names the namespace it is about to create.
      const namespaced = name !== 'RegisterNamespace';
      const changesRun = RUN_CHANGING_RPCS.has(name);
      handlers[name] = async (r, onCancel) => {
        if (namespaced) knownNamespace(core, r);
        if (check) await check(core, r);
        if (changesRun) return answeringHistoryLimits(core, r, () => handle(core, r, onCancel));
        return handle(core, r, onCancel);
      };
    }
    return handlers;
  }

  /**
   * UNIMPLEMENTED answers (naming the feature) for every method of `serviceName`: served after the real handlers,
   * so only methods nobody implements reach them.
   */
  unimplemented(serviceName: string): Record<string, Handler> {
    return unimplementedHandlers(serviceName, (namespace) => this.core.ns(namespace));
  }

  /**
   * Rebuilds runs from the journal and re-arms every deadline and task (time that passed while down fires now).
   * Returns how many executions it restored.
   */
  restore(restored: Map<string, { state: unknown; events: unknown[] }>): number {
    return restore(this.core, restored);
  }

  /** Journals every changed run; resolves once durable. */
  commit(): Promise<void> {
    return this.core.commit();
  }

  /** Forgets executions closed longer ago than their namespace's retention period, as the server's retention does. */
  sweepClosed(): void {
    sweepClosed(this.core);
  }

  close(): void {
    const core = this.core;
    core.clock.stop();
    for (const t of core.stickyTimers.values()) clearTimeout(t);
    core.queues.release(() => true);
    if (core.journal) {
      core.stageDirty(core.journal);
      core.journal.close();
    }
  }

  // ---------------------------------------------------------------- for the visibility and operator services

  /** The namespace of a request (default when empty); NOT_FOUND for unknown ones. */
  ns(namespace: string | null | undefined): string {
    return this.core.ns(namespace);
  }

  /** The visibility/describe view of a run. */
  executionInfo(ex: Execution): Plain<temporal.api.workflow.v1.IWorkflowExecutionInfo> {
    return executionInfo(ex);
  }

  /** Every run the engine holds (open and retained closed ones). */
  executions(): IterableIterator<Execution> {
    return this.core.runs.values();
  }

  /** Search attributes known to this server (OperatorService.ListSearchAttributes). */
  searchAttributeTypes(): Map<string, string> {
    return this.core.saTypes;
  }

  /** Registers search attribute types; durable (journaled) before it resolves. */
  addSearchAttributes(attrs: Record<string, string>): Promise<void> {
    return addSearchAttributes(this.core, attrs);
  }
}
