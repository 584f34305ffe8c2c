// What every verification use case stands on: the dependencies the composition root hands the area, the send caps'
// counting, the workflow runtime under a deadline, and the project's own verification. The use cases are files of
// their own (request.ts, otp-steps.ts); service.ts puts them together.
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { verificationWorkflowId, type VerificationWorkflow } from './contract.js';
import { assertOwnedBy } from '../projects/access.js';
import { ApiError } from '../platform/errors.js';
import {
  DEFAULT_WORKFLOW_CALL_TIMEOUT_MS,
  updateTimedOut,
  type WorkflowRuntime,
  workflowRefusal,
} from '../platform/temporal/workflow-calls.js';
import type { UpdateProof } from '../platform/temporal/messages.js';
import type { GatewayRegistry } from '../gateways/index.js';
import type { UpstreamGateways } from '../upstream/index.js';
import type { Project } from '../projects/index.js';
import type { BillingKeyStore, ReceiptStore } from '../payments/index.js';
import type { VerificationStore } from './store.js';
import type { PhoneIndex, VerificationSendStore } from './sends-store.js';
import { DEFAULT_SEND_LIMITS, sendLimitError, type SendLimits } from './send-limit-rules.js';

export const MAX_ID_LENGTH = 100;

/** A fresh proof for each update paygate sends (see UpdateProof): sealed by the codec on its way. */
export const updateProof = (): UpdateProof => ({ nonce: randomUUID() });

/**
 * The workflow's refusals of a resend before anything is sent: its validator's (a run not awaiting an OTP, a pass
 * verification, paygate's per-verification caps, which carry a payload message) and an ended run. A resend the gateway
 * was asked for fails with AUTH_REALARM_FAILED without a payload message.
 */
export function refusedBeforeSending(err: unknown): boolean {
  if (!(err instanceof ApiError)) return false;
  // the provider's circuit was open: nothing was sent
  if (err.errorCode === 'AUTH_NOT_READY' || err.errorCode === 'AUTH_REALARM_NOT_ABLE' || err.errorCode === 'UPSTREAM_UNAVAILABLE')
    return true;
  return err.errorCode === 'AUTH_REALARM_FAILED' && err.payloadMessage !== undefined;
}

/**
 * A workflow's refusal as its catalog error (an outage's naming `shownReceiptId`); an ended run means nothing awaits
 * an OTP any more.
 */
function workflowError(err: unknown, shownReceiptId?: string): unknown {
  if (err instanceof WorkflowNotFoundError) return new ApiError('AUTH_NOT_READY');
  return workflowRefusal(err, shownReceiptId) ?? err;
}

/** What the verification area is built from (the composition root fills it). */
export interface VerificationDeps {
  readonly stores: {
    readonly verifications: VerificationStore;
    readonly verificationSends: VerificationSendStore;
    readonly receipts: ReceiptStore;
    readonly billingKeys: Pick<BillingKeyStore, 'findByReceipt'>;
  };
  readonly gateways: GatewayRegistry;
  /** the projects' upstream providers: a verification at one is sent there, and takes the provider's receipt_id */
  readonly upstream?: UpstreamGateways;
  readonly clock: () => Date;
  readonly workflows?: WorkflowRuntime;
  readonly workflowCallTimeoutMs?: number;
  readonly sandboxUrl?: string;
  /** the Bearer token of the sandbox's internal routes */
  readonly sandboxToken?: string;
  /** caps on OTP sends per phone and per project across verifications; DEFAULT_SEND_LIMITS where absent */
  readonly sendLimits?: SendLimits;
}

export type VerificationContext = ReturnType<typeof createVerificationContext>;

export function createVerificationContext(deps: VerificationDeps) {
  const store = deps.stores.verifications;
  const sends = deps.stores.verificationSends;
  const sendLimits = deps.sendLimits ?? DEFAULT_SEND_LIMITS;
  const capped = sendLimits.perPhone.length > 0 || sendLimits.perProject.length > 0;
  /**
   * Counts one OTP send about to be attempted, or refuses it with 9479 having changed nothing. Checked after every
   * other refusal the service can give, so a send is counted only when it is attempted; the id uncounts it.
   */
  const countSend = async (
    project: Project,
    kind: 'request' | 'resend',
    phone: { readonly number: string } | { readonly index: PhoneIndex } | undefined,
  ): Promise<number | undefined> => {
    if (!capped) return undefined;
    const reserved = await sends.reserve({ applicationId: project.application_id, phone, kind, limits: sendLimits });
    if (!reserved.counted) throw sendLimitError(reserved.hit);
    return reserved.id;
  };
  const callTimeoutMs = deps.workflowCallTimeoutMs ?? DEFAULT_WORKFLOW_CALL_TIMEOUT_MS;

  const workflows = (): WorkflowRuntime => {
    if (!deps.workflows) throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The workflow engine is not configured.' });
    return deps.workflows;
  };
  /** Runs workflow calls under a deadline; a timeout becomes `onTimeout`, a workflow refusal its catalog error. */
  const callWorkflow = async <T>(fn: () => Promise<T>, onTimeout: () => ApiError, shownReceiptId?: string): Promise<T> => {
    try {
      return await workflows().client.withDeadline(Date.now() + callTimeoutMs, fn);
    } catch (err) {
      if (updateTimedOut(err)) throw onTimeout();
      throw workflowError(err, shownReceiptId);
    }
  };
  const notAnswering = () =>
    new ApiError('SERVICE_UNAVAILABLE', { message: 'The verification workflow did not answer in time; retry later.' });

  const handleOf = (receiptId: string): WorkflowHandle<VerificationWorkflow> =>
    workflows().client.workflow.getHandle<VerificationWorkflow>(verificationWorkflowId(receiptId));

  /** The caller's verification, or the catalog error for an unknown / foreign / non-verification receipt. */
  const ownVerification = async (receiptId: string, project: Project, unknown: 'RC_NOT_FOUND' | 'AUTH_NOT_FOUND') => {
    if (receiptId.length > MAX_ID_LENGTH) throw new ApiError(unknown);
    const row = await store.findNamed(project.application_id, receiptId);
    if (row) {
      assertOwnedBy(project, row.application_id);
      return row;
    }
    // a receipt of another kind: a payment's (receipts) or a billing key issuance's (billing_keys keeps its receipt_id)
    const other =
      (await deps.stores.receipts.findNamed(project.application_id, receiptId)) ??
      (await deps.stores.billingKeys.findByReceipt(project.application_id, receiptId));
    if (!other) throw new ApiError(unknown);
    // ownership before the kind: another project is told 1225 and nothing of what the receipt is
    assertOwnedBy(project, other.application_id);
    throw new ApiError('RC_NOT_AUTH');
  };

  const reload = async (receiptId: string) => {
    const row = await store.find(receiptId);
    if (!row) throw new ApiError('INTERNAL_ERROR', { cause: new Error(`verification ${receiptId} vanished`) });
    return row;
  };

  return { deps, store, sends, countSend, workflows, callWorkflow, notAnswering, handleOf, ownVerification, reload };
}
