import type { WorkflowClientInterceptor } from '@temporalio/client';
import { messageEnvelope } from './messages.js';

/**
 * Puts every signal's and update's arguments in the envelope that names the message (messages.ts), on every
 * client paygate sends them with: the workflows accept a message only in its own envelope, sealed for them.
 */
export const messageEnvelopes: WorkflowClientInterceptor = {
  signal: (input, next) => next({ ...input, args: messageEnvelope(input.signalName, input.args) }),
  signalWithStart: (input, next) => next({ ...input, signalArgs: messageEnvelope(input.signalName, input.signalArgs) }),
  startUpdate: (input, next) => next({ ...input, args: messageEnvelope(input.updateName, input.args) }),
  startUpdateWithStart: (input, next) => next({ ...input, updateArgs: messageEnvelope(input.updateName, input.updateArgs) }),
};
