// The RPCs of features this server does not have, and what it answers them: UNIMPLEMENTED with a message naming
// the feature — after checking the request's namespace, as Temporal checks it before any handler, so an unknown
// namespace is NamespaceNotFound here too. engine.ts serves these as the last handler object of each service, so
// an RPC the engine does implement is never shadowed.
import { unimplemented } from './errors.js';
import { root } from './proto.js';

type Handler = (r: never) => Promise<object>;

const SERVER = 'temporal-devserver';

/** The feature (with its verb, for the message) -> its RPCs (WorkflowService and OperatorService). */
const FEATURES: Record<string, string[]> = {
  'Schedules are': [
    'CreateSchedule',
    'DescribeSchedule',
    'UpdateSchedule',
    'PatchSchedule',
    'ListScheduleMatchingTimes',
    'DeleteSchedule',
    'ListSchedules',
    'CountSchedules',
  ],
  'Nexus operations and endpoints are': [
    'PollNexusTaskQueue',
    'RespondNexusTaskCompleted',
    'RespondNexusTaskFailed',
    'StartNexusOperationExecution',
    'DescribeNexusOperationExecution',
    'PollNexusOperationExecution',
    'ListNexusOperationExecutions',
    'CountNexusOperationExecutions',
    'RequestCancelNexusOperationExecution',
    'TerminateNexusOperationExecution',
    'DeleteNexusOperationExecution',
    'GetNexusEndpoint',
    'CreateNexusEndpoint',
    'UpdateNexusEndpoint',
    'DeleteNexusEndpoint',
    'ListNexusEndpoints',
  ],
  'Standalone activities are': [
    'StartActivityExecution',
    'DescribeActivityExecution',
    'PollActivityExecution',
    'ListActivityExecutions',
    'CountActivityExecutions',
    'RequestCancelActivityExecution',
    'TerminateActivityExecution',
    'DeleteActivityExecution',
    'PauseActivityExecution',
    'ResetActivityExecution',
    'UnpauseActivityExecution',
    'UpdateActivityExecutionOptions',
  ],
  'Activity pause, unpause, reset and options updates are': [
    'PauseActivity',
    'UnpauseActivity',
    'ResetActivity',
    'UpdateActivityOptions',
  ],
  'Worker versioning (build id compatibility and versioning rules) is': [
    'UpdateWorkerBuildIdCompatibility',
    'GetWorkerBuildIdCompatibility',
    'UpdateWorkerVersioningRules',
    'GetWorkerVersioningRules',
    'GetWorkerTaskReachability',
  ],
  'Worker deployments are': [
    'DescribeDeployment',
    'DescribeWorkerDeploymentVersion',
    'ListDeployments',
    'GetDeploymentReachability',
    'GetCurrentDeployment',
    'SetCurrentDeployment',
    'SetWorkerDeploymentCurrentVersion',
    'DescribeWorkerDeployment',
    'DeleteWorkerDeployment',
    'DeleteWorkerDeploymentVersion',
    'SetWorkerDeploymentRampingVersion',
    'ListWorkerDeployments',
    'CreateWorkerDeployment',
    'CreateWorkerDeploymentVersion',
    'UpdateWorkerDeploymentVersionComputeConfig',
    'ValidateWorkerDeploymentVersionComputeConfig',
    'UpdateWorkerDeploymentVersionMetadata',
    'SetWorkerDeploymentManager',
    'UpdateWorkflowExecutionOptions',
  ],
  'Workflow reset is': ['ResetWorkflowExecution'],
  'Workflow pause is': ['PauseWorkflowExecution', 'UnpauseWorkflowExecution'],
  'Batch operations are': ['StartBatchOperation', 'StopBatchOperation', 'DescribeBatchOperation', 'ListBatchOperations'],
  'Workflow rules are': [
    'CreateWorkflowRule',
    'DescribeWorkflowRule',
    'DeleteWorkflowRule',
    'ListWorkflowRules',
    'TriggerWorkflowRule',
  ],
  'Worker heartbeats and worker commands are': [
    'RecordWorkerHeartbeat',
    'ListWorkers',
    'CountWorkers',
    'DescribeWorker',
    'FetchWorkerConfig',
    'UpdateWorkerConfig',
  ],
  'Task queue configuration is': ['UpdateTaskQueueConfig', 'ListTaskQueuePartitions'],
  'Updating, deprecating and deleting namespaces is': ['UpdateNamespace', 'DeprecateNamespace', 'DeleteNamespace'],
  'Deleting workflow executions is': ['DeleteWorkflowExecution'],
  'Archival is': ['ListArchivedWorkflowExecutions'],
  'Standard visibility (use ListWorkflowExecutions) is': ['ListOpenWorkflowExecutions', 'ListClosedWorkflowExecutions'],
  'Removing search attributes is': ['RemoveSearchAttributes'],
  'Multi-cluster replication is': ['AddOrUpdateRemoteCluster', 'RemoveRemoteCluster', 'ListClusters', 'GetClusterInfo'],
};

const FEATURE_OF = new Map<string, string>();
for (const [feature, methods] of Object.entries(FEATURES)) for (const m of methods) FEATURE_OF.set(m, feature);

/** What an unimplemented RPC answers: the feature it belongs to, or the method itself for one outside the table. */
export function unimplementedMessage(method: string): string {
  const feature = FEATURE_OF.get(method);
  return feature ? `${feature} not implemented by ${SERVER} (${method})` : `${method} is not implemented by ${SERVER}`;
}

/**
 * An UNIMPLEMENTED handler for every method of `serviceName`; `checkNamespace` runs first on requests that name
 * a namespace (it throws NamespaceNotFound for an unknown one).
 */
export function unimplementedHandlers(serviceName: string, checkNamespace: (namespace: string) => void): Record<string, Handler> {
  const handlers: Record<string, Handler> = {};
  for (const m of root.lookupService(serviceName).resolveAll().methodsArray) {
    const message = unimplementedMessage(m.name);
    handlers[m.name] = async (r: never) => {
      const namespace = (r as { namespace?: string | null }).namespace;
      if (namespace) checkNamespace(namespace);
      throw unimplemented(message);
    };
  }
  return handlers;
}
