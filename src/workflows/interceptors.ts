// The workflows' door: every signal, update, workflow input and activity result passes here before any handler
// sees it (the bundle registers this module's interceptors; src/platform/temporal/workflow-bundle.ts). A message is
// accepted only in its own envelope, sealed for this workflow (src/platform/temporal/messages.ts); anything else —
// plain, empty, garbage, tampered, copied from another workflow or another message — is dropped (a signal) or
// rejected before it is accepted (an update), reported to the worker, which logs and counts it, and never fails
// the workflow task: the run goes on and applies the next genuine message.
import {
  ApplicationFailure,
  patched,
  proxyActivities,
  proxyLocalActivities,
  proxySinks,
  sleep,
  type ActivityInput,
  type LocalActivityInput,
  type Next,
  type WorkflowInterceptorsFactory,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import {
  BOUND_MESSAGES_PATCH,
  messageEnvelope,
  type MessageRefusal,
  openMessage,
  payloadRefusalOf,
  type RefusalRecord,
  type RefusalSinks,
} from '../platform/temporal/messages.js';

/** The error type an update is rejected with when its argument is not a genuine message for it. */
export const MESSAGE_REFUSED = 'MESSAGE_REFUSED';

/** How long a workflow waits before it asks again for an activity whose result was refused. */
const REFUSED_RESULT_WAIT_MS = 5_000;

const { paygateRefusals } = proxySinks<RefusalSinks>();

export const interceptors: WorkflowInterceptorsFactory = () => {
  // Runs started before messages were bound (no patch marker in their history) also take a message as an earlier
  // version sent it, bare; runs started since take only envelopes. Decided once, at the run's start, from its
  // history: the same on every replay.
  let envelopesOnly = true;

  const refuse = (kind: RefusalRecord['kind'], name: string, reason: MessageRefusal) =>
    paygateRefusals.record({ kind, name, reason });

  /** The message's own arguments, or undefined when it is refused (and recorded). */
  const open = (kind: 'signal' | 'update', name: string, args: unknown[]): unknown[] | undefined => {
    const opened = openMessage(name, args);
    if (opened.ok) return opened.args;
    const bareFromEarlierVersion = !envelopesOnly && opened.reason === 'no-envelope';
    if (bareFromEarlierVersion) return args;
    refuse(kind, name, opened.reason);
    return undefined;
  };

  const refusedUpdate = (name: string) =>
    ApplicationFailure.nonRetryable(`the ${name} update is not a message paygate sealed for this workflow`, MESSAGE_REFUSED);

  /**
   * An activity's result that did not open (a poller without the keyring answered the task, or a result copied from
   * another run) is never handed to the workflow: after a wait the activity is asked again, as a new call through
   * these same interceptors. Activities are idempotent, so the genuine outcome comes back.
   */
  async function resultOf<I extends ActivityInput | LocalActivityInput>(
    input: I,
    next: (input: I) => Promise<unknown>,
    again: (input: I) => Promise<unknown>,
  ): Promise<unknown> {
    const result = await next(input);
    const reason = payloadRefusalOf(result);
    if (reason === undefined) return result;
    refuse('activity-result', input.activityType, reason);
    await sleep(REFUSED_RESULT_WAIT_MS);
    return again(input);
  }

  const outbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: (input, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) =>
      resultOf(input, next, (i) => {
        const activity = proxyActivities(i.options)[i.activityType]!;
        return activity(...i.args);
      }),
    scheduleLocalActivity: (input, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>) =>
      resultOf(input, next, (i) => {
        const activity = proxyLocalActivities(i.options)[i.activityType]!;
        return activity(...i.args);
      }),
    // a workflow's own signal to another (a delivery stopping its siblings) travels in an envelope too
    signalWorkflow: (input, next) => next({ ...input, args: messageEnvelope(input.signalName, input.args) }),
  };

  return {
    inbound: [
      {
        async execute(input, next) {
          envelopesOnly = patched(BOUND_MESSAGES_PATCH);
          // every paygate workflow takes its one sealed input: a start without it (which the workflow would read as
          // undefined, failing its task at every retry) is refused like a forged one
          const reason: MessageRefusal | undefined =
            input.args.length === 0 || input.args[0] === undefined || input.args[0] === null
              ? 'no-input'
              : input.args.map(payloadRefusalOf).find((r) => r !== undefined);
          if (reason !== undefined) {
            refuse('workflow-input', 'input', reason);
            throw ApplicationFailure.nonRetryable(
              'the workflow input is not sealed by paygate for this workflow',
              MESSAGE_REFUSED,
            );
          }
          return next(input);
        },
        async handleSignal(input, next) {
          const args = open('signal', input.signalName, input.args);
          if (args === undefined) return;
          return next({ ...input, args });
        },
        validateUpdate(input, next) {
          const args = open('update', input.name, input.args);
          if (args === undefined) throw refusedUpdate(input.name);
          next({ ...input, args });
        },
        async handleUpdate(input, next) {
          // the validator ran first and recorded any refusal; an update without a validator is checked here
          const opened = openMessage(input.name, input.args);
          const bareFromEarlierVersion = !opened.ok && !envelopesOnly && opened.reason === 'no-envelope';
          if (!opened.ok && !bareFromEarlierVersion) throw refusedUpdate(input.name);
          const args = opened.ok ? opened.args : input.args;
          return next({ ...input, args });
        },
      },
    ],
    outbound: [outbound],
  };
};
