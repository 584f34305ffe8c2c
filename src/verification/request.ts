// POST /v2/request/authentication: the send caps first, then (at an upstream provider) the provider's OTP request,
// the verification stored, and its run started with one update-with-start that waits for the OTP send.
import { WithStartWorkflowOperation } from '@temporalio/client';
import {
  VERIFICATION_CAPS,
  VERIFICATION_WORKFLOW_TYPE,
  otpSentUpdate,
  verificationWorkflowId,
  type VerificationWorkflow,
} from './contract.js';
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { VerificationRequest } from './rules.js';
import { GatewayUnavailableError, type IdentityGateway } from '../gateways/index.js';
import type { Project } from '../projects/index.js';
import type { VerificationRow } from './store.js';
import { bindLogIds } from '../platform/observability/log-context.js';

import type { VerificationContext } from './context.js';

/**
 * The OTP request at the project's provider, before the workflow starts (the provider assigns the receipt_id). Its
 * refusal reaches the merchant unchanged; an unreachable provider is 2401, as a local PG's outage is.
 */
async function sendAtProvider(
  identity: IdentityGateway,
  project: Project,
  req: VerificationRequest,
  clientIp: string,
): Promise<{ readonly tid: string; readonly receiptId: string; readonly shownTid: string }> {
  try {
    const sent = await identity.requestOtp({
      idempotencyKey: `verification:${project.application_id}:${newId()}:request`,
      merchantId: project.application_id,
      person: req.person,
      type: req.type,
      clientIp,
      ...(req.siteUrl !== undefined ? { siteUrl: req.siteUrl } : {}),
      orderName: req.orderName,
      authenticationId: req.authenticationId,
    });
    return { tid: sent.tid, receiptId: sent.receiptId ?? sent.tid, shownTid: sent.shownTid ?? sent.tid };
  } catch (err) {
    if (err instanceof GatewayUnavailableError) {
      // no verification is kept either way: the merchant asks for a new one (a code that reached the phone
      // under this request cannot be confirmed at paygate)
      const message = err.deadlineMissed
        ? 'The identity gateway did not answer in time; no verification was created. Request a new one.'
        : 'The identity gateway could not be reached; no verification was created. Request a new one.';
      throw new ApiError('AUTH_REQUEST_FAILED', { message, cause: err });
    }
    throw err;
  }
}

/** A request's pg as checked for the project, and the upstream provider's identity gateway when that serves it. */
export interface CheckedPg {
  readonly pg: string;
  readonly atProvider: IdentityGateway | undefined;
}

export async function request(
  ctx: VerificationContext,
  project: Project,
  checked: CheckedPg,
  req: VerificationRequest,
  sourceIp: string,
): Promise<VerificationRow> {
  const { deps, store, sends, countSend, workflows, callWorkflow, reload } = ctx;
  const { client, taskQueue } = workflows();
  const requestedAt = deps.clock();
  const clientIp = req.clientIp ?? sourceIp;
  if (checked.pg !== req.pg) throw new Error(`the request's pg ${req.pg} is not the one checked (${checked.pg})`);
  // at an upstream provider the OTP is sent first: the provider's receipt_id becomes the verification's
  const { atProvider } = checked;
  // the caps, before anything is sent or stored: a refusal leaves no verification, no run, no PG call
  const counted = await countSend(project, 'request', { number: req.person.phone });
  let sent: Awaited<ReturnType<typeof sendAtProvider>> | undefined;
  try {
    sent = atProvider ? await sendAtProvider(atProvider, project, req, clientIp) : undefined;
  } catch (err) {
    // the provider's circuit was open: nothing was sent, so nothing counts towards the send caps
    if (counted !== undefined && err instanceof ApiError && err.errorCode === 'UPSTREAM_UNAVAILABLE')
      await sends.release(counted);
    throw err;
  }
  // paygate's own id, also for one sent at a provider: the provider's receipt_id (what the merchant is shown) is
  // unique at the provider for this project's account only
  const receiptId = newId();
  bindLogIds({ receipt_id: sent?.receiptId ?? receiptId });
  try {
    await store.create({
      receiptId,
      providerReceiptId: sent?.receiptId,
      applicationId: project.application_id,
      authenticationId: req.authenticationId,
      orderName: req.orderName,
      pg: req.pg,
      type: req.type,
      metadata: req.metadata,
      extra: req.extra,
      clientIp,
      ...(req.siteUrl !== undefined ? { siteUrl: req.siteUrl } : {}),
      requestedAt,
      ...(req.type === 'sms' ? { phoneIndex: sends.phoneIndex(req.person.phone) } : {}),
    });
  } catch (err) {
    // no record, so no run will send anything: the slot is given back, unless a provider already sent the OTP
    if (counted !== undefined && !sent) await sends.release(counted);
    throw err;
  }
  // the record keeps the tid the merchant is shown; the run keeps the one the provider's calls name
  if (sent) await store.markOtpSent(receiptId, sent.shownTid);

  await callWorkflow(
    async () => {
      // Update-with-start: one round trip starts the run and waits for the OTP send to settle
      // (ExecuteMultiOperation, enabled by default since Temporal 1.26.2).
      const startWorkflowOperation = new WithStartWorkflowOperation<VerificationWorkflow>(VERIFICATION_WORKFLOW_TYPE, {
        workflowId: verificationWorkflowId(receiptId),
        workflowIdConflictPolicy: 'FAIL',
        taskQueue,
        args: [
          {
            receiptId,
            merchantId: project.application_id,
            pg: req.pg,
            type: req.type,
            requestedAt: requestedAt.toISOString(),
            clientIp,
            ...(req.siteUrl !== undefined ? { siteUrl: req.siteUrl } : {}),
            person: req.person,
            caps: VERIFICATION_CAPS,
            oneActivityPerStep: true,
            ...(sent ? { sentTid: sent.tid } : {}),
          },
        ],
      });
      await client.workflow.executeUpdateWithStart(otpSentUpdate, { startWorkflowOperation });
    },
    () => new ApiError('AUTH_REQUEST_FAILED', { message: 'The verification workflow did not answer in time.' }),
  );
  return reload(receiptId);
}
