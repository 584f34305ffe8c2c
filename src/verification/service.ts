// REST identity verification: request, resend (realarm), confirm, certificate lookup. Each verification
// is a workflow (src/workflows/verification.ts); this service checks what the database can answer, then
// drives the workflow with updates under a deadline and returns the stored row.
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import {
  VERIFICATION_CAPS,
  VERIFICATION_WINDOW_MS,
  VERIFICATION_WORKFLOW_TYPE,
  VerificationStatus,
  confirmOtpUpdate,
  otpSentUpdate,
  resendOtpUpdate,
  verificationWorkflowId,
  type VerificationWorkflow,
} from './contract.js';
import { assertOwnedBy } from '../projects/access.js';
import { ApiError } from '../platform/errors.js';
import {
  DEFAULT_WORKFLOW_CALL_TIMEOUT_MS,
  updateTimedOut,
  type WorkflowRuntime,
  workflowRefusal,
} from '../platform/temporal/workflow-calls.js';
import { newId } from '../platform/ids.js';
import type { UpdateProof } from '../platform/temporal/messages.js';
import { parseOtp, type VerificationRequest, type VerificationView } from './rules.js';
import {
  fetchSandboxSms,
  type SandboxSms,
  type GatewayRegistry,
  GatewayUnavailableError,
  type IdentityGateway,
} from '../gateways/index.js';
import type { UpstreamGateways } from '../upstream/index.js';
import type { Project } from '../projects/index.js';
import { merchantVerificationId, type VerificationRow } from './store.js';
import type { IdempotencyKeyProof } from '../platform/idempotency.js';
import { bindLogIds } from '../platform/observability/log-context.js';
import type { BillingKeyStore, ReceiptStore } from '../payments/index.js';
import type { VerificationStore } from './store.js';
import type { PhoneIndex, VerificationSendStore } from './sends-store.js';
import { DEFAULT_SEND_LIMITS, sendLimitError, type SendLimits } from './send-limit-rules.js';

const MAX_ID_LENGTH = 100;

/** A fresh proof for each update paygate sends (see UpdateProof): sealed by the codec on its way. */
const updateProof = (): UpdateProof => ({ nonce: randomUUID() });

/**
 * The workflow's refusals of a resend before anything is sent: its validator's (a run not awaiting an OTP, a pass
 * verification, paygate's per-verification caps, which carry a payload message) and an ended run. A resend the gateway
 * was asked for fails with AUTH_REALARM_FAILED without a payload message.
 */
function refusedBeforeSending(err: unknown): boolean {
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

/**
 * How long a request may keep its verification in status 50 before its workflow has started: longer than the route
 * waits for the workflow (DEFAULT_WORKFLOW_CALL_TIMEOUT_MS), so a live request is never taken for an orphan.
 */
export const ORPHANED_SEND_AFTER_MS = 3 * 60_000;

export interface VerificationService {
  /**
   * Step 1, once pg and method are present: 2406 for a PG without REST verification, 2001 when not enabled. A PG the
   * project's upstream provider serves passes: the provider judges it (its own 2406 reaches the merchant).
   */
  checkPg(project: Project, pg: string): Promise<void>;
  /** Starts the verification and waits until the SMS / push was sent; `sourceIp` is the default client_ip. */
  request(project: Project, request: VerificationRequest, sourceIp: string): Promise<VerificationRow>;
  resend(project: Project, receiptId: string): Promise<VerificationRow>;
  /**
   * `body` is the confirm request's body: its otp must be 6 digits for SMS (2405), anything for pass. A retry under
   * the Idempotency-Key of the confirm that verified (its request died before its answer was stored) gets the
   * verified row; any other confirm of a verified receipt is 2404.
   */
  confirm(project: Project, receiptId: string, body: unknown, idempotencyKey?: IdempotencyKeyProof): Promise<VerificationRow>;
  /** The result within 30 minutes of authenticated_at: 2408 before, 2409 after. */
  certificate(project: Project, receiptId: string): Promise<VerificationRow>;
  /** What a response is rendered from; `withPerson` opens the sealed personal data. */
  view(row: VerificationRow, gatewayUrl: string, withPerson: boolean): VerificationView;
  /**
   * Sandbox mode: the messages the sandbox identity PG sent to `phone` for the caller's own
   * verifications (by gateway tid), newest first. Another project's OTPs to the same phone stay hidden.
   */
  sandboxInbox(project: Project, phone: string): Promise<SandboxSms[]>;
  /** The project's verifications, newest first (the dashboard); views without personal data. */
  list(project: Project, limit: number): Promise<VerificationView[]>;
  /** One verification of the caller as the dashboard shows it: no personal data; 2000 / 1225 / 2064 as a lookup. */
  get(project: Project, receiptId: string): Promise<VerificationView>;
  /** Sandbox mode: the messages sent to `phone` for one verification of the caller (its gateway tid). */
  sandboxInboxOf(project: Project, receiptId: string, phone: string): Promise<SandboxSms[]>;
  /**
   * The worker's sweep: a verification left sending (status 50) by a request whose process died after storing it and
   * before its workflow started has no run to move it; it ends as a failed request (AUTH_REQUEST_FAILED), as a send
   * that failed. One whose run exists is left to it. Returns how many were ended.
   */
  failOrphanedSends(now: Date): Promise<number>;
}

export function createVerificationService(deps: {
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
}): VerificationService {
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

  /**
   * The OTP request at the project's provider, before the workflow starts (the provider assigns the receipt_id). Its
   * refusal reaches the merchant unchanged; an unreachable provider is 2401, as a local PG's outage is.
   */
  const sendAtProvider = async (
    identity: IdentityGateway,
    project: Project,
    req: VerificationRequest,
    clientIp: string,
  ): Promise<{ readonly tid: string; readonly receiptId: string; readonly shownTid: string }> => {
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
  };

  const service: VerificationService = {
    async checkPg(project, pg) {
      if ((await deps.upstream?.gateway(project.application_id, pg))?.identity) return;
      if (!deps.gateways.get(pg)?.identity) throw new ApiError('AUTH_CONFIRM_METHOD_NOT_FOUND');
      if (!project.pgs.includes(pg))
        throw new ApiError('RC_PG_NOT_FOUND', { message: `PG '${pg}' is not enabled for this project.` });
    },

    async request(project, req, sourceIp) {
      const { client, taskQueue } = workflows();
      const requestedAt = deps.clock();
      const clientIp = req.clientIp ?? sourceIp;
      // at an upstream provider the OTP is sent first: the provider's receipt_id becomes the verification's
      const atProvider = (await deps.upstream?.gateway(project.application_id, req.pg))?.identity;
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
    },

    async resend(project, receiptId) {
      const row = await ownVerification(receiptId, project, 'AUTH_NOT_FOUND');
      if (row.authenticate_type !== 'sms') throw new ApiError('AUTH_REALARM_NOT_ABLE');
      if (row.status !== VerificationStatus.AwaitingOtp) throw new ApiError('AUTH_NOT_READY');
      // The run's own resend cap, where the stored count already shows it (every run awaiting an OTP has
      // VERIFICATION_CAPS): answered as the run answers it, and before the send caps, which would otherwise answer
      // 9479 for a resend that was never going to be sent.
      const { maxResends } = VERIFICATION_CAPS;
      if (row.number_of_realarms >= maxResends) {
        throw new ApiError('AUTH_REALARM_FAILED', {
          message: 'the resend limit of this verification is reached',
          payloadMessage: `At most ${maxResends} resends per verification; request a new one.`,
        });
      }
      const phone =
        row.phone_key_id !== null && row.phone_mac !== null
          ? { index: { keyId: row.phone_key_id, mac: row.phone_mac } }
          : undefined;
      const counted = await countSend(project, 'resend', phone);
      try {
        await callWorkflow(
          () => handleOf(row.receipt_id).executeUpdate(resendOtpUpdate, { args: [updateProof()] }),
          notAnswering,
          merchantVerificationId(row),
        );
      } catch (err) {
        // refused by the run before it sent anything: nothing to count (a timeout or a gateway failure stays counted)
        if (counted !== undefined && refusedBeforeSending(err)) await sends.release(counted);
        throw err;
      }
      return reload(row.receipt_id);
    },

    async confirm(project, receiptId, body, idempotencyKey) {
      const row = await ownVerification(receiptId, project, 'AUTH_NOT_FOUND');
      const sameKey = idempotencyKey !== undefined && row.confirm_key_mac !== null && idempotencyKey.matches(row.confirm_key_mac);
      if (row.status === VerificationStatus.Verified && sameKey) return row;
      if (row.status !== VerificationStatus.AwaitingOtp) throw new ApiError('AUTH_NOT_READY');
      const otp = parseOtp(body, row.authenticate_type);
      if (idempotencyKey) await store.noteConfirmKey(row.receipt_id, idempotencyKey.mac);
      await callWorkflow(
        () => handleOf(row.receipt_id).executeUpdate(confirmOtpUpdate, { args: [{ ...updateProof(), otp }] }),
        notAnswering,
        merchantVerificationId(row),
      );
      return reload(row.receipt_id);
    },

    async certificate(project, receiptId) {
      const row = await ownVerification(receiptId, project, 'RC_NOT_FOUND');
      if (row.status !== VerificationStatus.Verified || !row.authenticated_at) throw new ApiError('AUTH_NOT_CONFIRMED');
      const windowOver = deps.clock().getTime() > row.authenticated_at.getTime() + VERIFICATION_WINDOW_MS;
      if (windowOver || row.identifiers_purged_at) throw new ApiError('AUTH_EXPIRED');
      return row;
    },

    async failOrphanedSends(now) {
      let failed = 0;
      for (const receiptId of await store.sendingSince(new Date(now.getTime() - ORPHANED_SEND_AFTER_MS), 50)) {
        try {
          await handleOf(receiptId).describe();
          continue; // its run moves it
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        }
        await store.markRequestFailed(receiptId, { errorName: 'AUTH_REQUEST_FAILED' });
        failed++;
      }
      return failed;
    },

    view(row, gatewayUrl, withPerson) {
      return {
        receiptId: merchantVerificationId(row),
        authenticationId: row.authentication_id,
        pg: row.pg,
        status: row.status,
        metadata: row.metadata,
        requestedAt: row.requested_at,
        authenticatedAt: row.authenticated_at,
        tid: row.tid,
        numberOfRealarms: row.number_of_realarms,
        gatewayUrl,
        ...(withPerson ? { person: store.openPerson(row) } : {}),
      };
    },

    async sandboxInbox(project, phone) {
      if (!deps.sandboxUrl) throw new ApiError('NOT_FOUND');
      const messages = await fetchSandboxSms({ url: deps.sandboxUrl, token: deps.sandboxToken ?? '' }, phone);
      const own = await store.tidsOf(project.application_id, [...new Set(messages.map((m) => m.tid))]);
      return messages.filter((m) => own.has(m.tid));
    },

    async list(project, limit) {
      const rows = await store.listOf(project.application_id, limit);
      return rows.map((row) => service.view(row, '', false));
    },

    async get(project, receiptId) {
      return service.view(await ownVerification(receiptId, project, 'RC_NOT_FOUND'), '', false);
    },

    async sandboxInboxOf(project, receiptId, phone) {
      const row = await ownVerification(receiptId, project, 'RC_NOT_FOUND');
      if (!row.tid) return [];
      return (await service.sandboxInbox(project, phone)).filter((m) => m.tid === row.tid);
    },
  };
  return service;
}
