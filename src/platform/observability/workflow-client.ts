// The Temporal client's calls seen once for every caller: a workflow start the service accepted is counted by its
// type, and the workflow id of each start, update or signal is added to the current request's log lines. Installed
// on the API's client (connectTemporalClient) and on the client the worker gives its activities.
import type { WorkflowClientInterceptor } from '@temporalio/client';
import { bindLogIds } from './log-context.js';
import type { Metrics } from './metrics.js';

export function observingWorkflowClient(metrics: Pick<Metrics, 'workflowStart'> | undefined): WorkflowClientInterceptor {
  return {
    async startWithDetails(input, next) {
      bindLogIds({ workflow_id: input.options.workflowId });
      const started = await next(input);
      metrics?.workflowStart(input.workflowType);
      return started;
    },
    async startUpdateWithStart(input, next) {
      bindLogIds({ workflow_id: input.workflowStartOptions.workflowId });
      const output = await next(input);
      metrics?.workflowStart(input.workflowType);
      return output;
    },
    async signalWithStart(input, next) {
      bindLogIds({ workflow_id: input.options.workflowId });
      const runId = await next(input);
      metrics?.workflowStart(input.workflowType);
      return runId;
    },
    startUpdate(input, next) {
      bindLogIds({ workflow_id: input.workflowExecution.workflowId });
      return next(input);
    },
    signal(input, next) {
      bindLogIds({ workflow_id: input.workflowExecution.workflowId });
      return next(input);
    },
  };
}
