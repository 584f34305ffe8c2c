// REST identity verification: request, resend (realarm), confirm, certificate lookup — and, in sandbox
// mode, the SMS inbox. Each verification is a workflow (src/workflows/verification.ts); these routes
// check what the database can answer, then drive the workflow with updates and render the stored row.
import { ApplicationFailure } from '@temporalio/common';
import {
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  isGrpcServiceError,
  type WorkflowHandle,
} from '@temporalio/client';
import { status as grpcStatus } from '@grpc/grpc-js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, isErrorName } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { formatTimestamp } from '../../domain/time.js';
import {
  parseOtp,
  parseReceiptIdBody,
  parseVerificationPg,
  parseVerificationRequest,
  renderVerificationRequested,
  renderVerificationResult,
  type VerificationView,
} from '../../domain/verification.js';
import { fetchSandboxSms } from '../../gateways/sandbox-inbox.js';
import { findReceipt } from '../../store/receipts.js';
import { createVerificationStore, type VerificationRow, type VerificationStore } from '../../store/verifications.js';
import type { Project } from '../../store/projects.js';
import { createFieldCipher } from '../../security/field-cipher.js';
import type { verificationWorkflow } from '../../workflows/verification.js';
import {
  VERIFICATION_WINDOW_MS,
  VERIFICATION_WORKFLOW_TYPE,
  VerificationStatus,
  confirmOtpUpdate,
  otpSentUpdate,
  resendOtpUpdate,
  verificationWorkflowId,
  type VerificationFailureDetails,
} from '../../contracts/verification.js';
import { assertOwnedBy } from '../auth.js';

const MAX_ID_LENGTH = 100;
const DEFAULT_WORKFLOW_CALL_TIMEOUT_MS = 60_000;

/** The workflow did not answer within the route's deadline (no worker polling, engine overloaded). */
function timedOut(err: unknown): boolean {
  return (
    err instanceof WorkflowUpdateRPCTimeoutOrCancelledError ||
    (isGrpcServiceError(err) && err.code === grpcStatus.DEADLINE_EXCEEDED)
  );
}

/** A workflow's refusal (ApplicationFailure typed with a catalog name) as the API error it stands for. */
function workflowError(err: unknown): unknown {
  if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
    const { type, message } = err.cause;
    if (type && isErrorName(type)) {
      const details = (err.cause.details?.[0] ?? {}) as VerificationFailureDetails;
      return new ApiError(type, {
        message,
        ...(details.pgErrorCode !== undefined ? { pgErrorCode: details.pgErrorCode } : {}),
        ...(details.payloadMessage !== undefined ? { payloadMessage: details.payloadMessage } : {}),
      });
    }
  }
  // The workflow has ended (window closed, purged): nothing is awaiting an OTP any more.
  if (err instanceof WorkflowNotFoundError) return new ApiError('AUTH_NOT_READY');
  return err;
}

export async function verificationRoutes(app: FastifyInstance): Promise<void> {
  const { deps } = app;
  const store: VerificationStore = createVerificationStore(deps.database.db, createFieldCipher(deps.keyring));

  const temporal = () => {
    if (!deps.temporal) throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The workflow engine is not configured.' });
    return deps.temporal;
  };
  const callTimeoutMs = deps.workflowCallTimeoutMs ?? DEFAULT_WORKFLOW_CALL_TIMEOUT_MS;
  /** Runs workflow calls under a deadline; a timeout becomes `onTimeout`, a workflow refusal its catalog error. */
  const callWorkflow = async <T>(fn: () => Promise<T>, onTimeout: () => ApiError): Promise<T> => {
    try {
      return await temporal().client.withDeadline(Date.now() + callTimeoutMs, fn);
    } catch (err) {
      if (timedOut(err)) throw onTimeout();
      throw workflowError(err);
    }
  };
  const notAnswering = () =>
    new ApiError('SERVICE_UNAVAILABLE', { message: 'The verification workflow did not answer in time; retry later.' });

  const handleOf = (receiptId: string): WorkflowHandle<typeof verificationWorkflow> =>
    temporal().client.workflow.getHandle<typeof verificationWorkflow>(verificationWorkflowId(receiptId));

  const gatewayUrl = (request: FastifyRequest) => deps.config.publicBaseUrl ?? `${request.protocol}://${request.host}`;

  const view = (row: VerificationRow, request: FastifyRequest, withPerson: boolean): VerificationView => ({
    receiptId: row.receipt_id,
    authenticationId: row.authentication_id,
    pg: row.pg,
    status: row.status,
    metadata: row.metadata,
    requestedAt: row.requested_at,
    authenticatedAt: row.authenticated_at,
    tid: row.tid,
    numberOfRealarms: row.number_of_realarms,
    gatewayUrl: gatewayUrl(request),
    ...(withPerson ? { person: store.openPerson(row) } : {}),
  });

  /** The caller's verification, or the catalog error for an unknown / foreign / non-verification receipt. */
  const ownVerification = async (receiptId: string, project: Project, unknown: 'RC_NOT_FOUND' | 'AUTH_NOT_FOUND') => {
    if (receiptId.length > MAX_ID_LENGTH) throw new ApiError(unknown);
    const row = await store.find(receiptId);
    if (row) {
      assertOwnedBy(project, row.application_id);
      return row;
    }
    const other = await findReceipt(deps.database.db, receiptId);
    if (!other) throw new ApiError(unknown);
    assertOwnedBy(project, other.application_id);
    throw new ApiError('RC_NOT_AUTH');
  };

  const reload = async (receiptId: string) => {
    const row = await store.find(receiptId);
    if (!row) throw new ApiError('INTERNAL_ERROR', { cause: new Error(`verification ${receiptId} vanished`) });
    return row;
  };

  app.post(
    '/v2/request/authentication',
    {
      config: { auth: 'project' },
      schema: {
        summary: 'Request an identity verification (SMS OTP or pass push)',
        description:
          'Starts the verification workflow and answers once the gateway has sent the SMS / push: status 51 with authenticate_data.tid and number_of_realarms 0.',
        tags: ['verification'],
      },
    },
    async (request) => {
      const { pg } = parseVerificationPg(request.body);
      if (!deps.gateways.get(pg)?.identity) throw new ApiError('AUTH_CONFIRM_METHOD_NOT_FOUND');
      if (!request.project.pgs.includes(pg)) throw new ApiError('RC_PG_NOT_FOUND', { message: `PG '${pg}' is not enabled for this project.` });
      const req = parseVerificationRequest(request.body, pg);
      const { client, taskQueue } = temporal();

      const receiptId = newId();
      const requestedAt = deps.clock();
      await store.create({
        receiptId,
        applicationId: request.project.application_id,
        authenticationId: req.authenticationId,
        orderName: req.orderName,
        pg,
        type: req.type,
        metadata: req.metadata,
        extra: req.extra,
        clientIp: req.clientIp ?? request.ip,
        ...(req.siteUrl !== undefined ? { siteUrl: req.siteUrl } : {}),
        requestedAt,
      });

      await callWorkflow(async () => {
        const handle = await client.workflow.start<typeof verificationWorkflow>(VERIFICATION_WORKFLOW_TYPE, {
          workflowId: verificationWorkflowId(receiptId),
          taskQueue,
          args: [
            {
              receiptId,
              merchantId: request.project.application_id,
              pg,
              type: req.type,
              requestedAt: requestedAt.toISOString(),
              clientIp: req.clientIp ?? request.ip,
              ...(req.siteUrl !== undefined ? { siteUrl: req.siteUrl } : {}),
              person: req.person,
            },
          ],
        });
        await handle.executeUpdate(otpSentUpdate);
      }, () => new ApiError('AUTH_REQUEST_FAILED', { message: 'The verification workflow did not answer in time.' }));
      return renderVerificationRequested(view(await reload(receiptId), request, false));
    },
  );

  app.post(
    '/v2/authenticate/realarm',
    {
      config: { auth: 'project' },
      schema: {
        summary: 'Resend the SMS OTP',
        description:
          'number_of_realarms grows before the gateway answers, so it also counts a failed resend (2411). Only for SMS verifications (2412).',
        tags: ['verification'],
      },
    },
    async (request) => {
      const { receiptId } = parseReceiptIdBody(request.body);
      const row = await ownVerification(receiptId, request.project, 'AUTH_NOT_FOUND');
      if (row.authenticate_type !== 'sms') throw new ApiError('AUTH_REALARM_NOT_ABLE');
      if (row.status !== VerificationStatus.AwaitingOtp) throw new ApiError('AUTH_NOT_READY');
      await callWorkflow(() => handleOf(receiptId).executeUpdate(resendOtpUpdate), notAnswering);
      return renderVerificationRequested(view(await reload(receiptId), request, false));
    },
  );

  app.post(
    '/v2/authenticate/confirm',
    {
      config: { auth: 'project' },
      schema: {
        summary: 'Confirm the OTP',
        description:
          'Within 30 minutes of the request. A wrong OTP gives 2405 (HTTP 500); a verification not awaiting an OTP (verified, expired, failed) gives 2404.',
        tags: ['verification'],
      },
    },
    async (request) => {
      const { receiptId } = parseReceiptIdBody(request.body);
      const row = await ownVerification(receiptId, request.project, 'AUTH_NOT_FOUND');
      if (row.status !== VerificationStatus.AwaitingOtp) throw new ApiError('AUTH_NOT_READY');
      const otp = parseOtp(request.body, row.authenticate_type);
      await callWorkflow(() => handleOf(receiptId).executeUpdate(confirmOtpUpdate, { args: [{ otp }] }), notAnswering);
      return renderVerificationResult(view(await reload(receiptId), request, true));
    },
  );

  app.get<{ Params: { receipt_id: string } }>(
    '/v2/certificate/:receipt_id',
    {
      config: { auth: 'project' },
      schema: {
        summary: 'Look up a verification result',
        description: 'Only within 30 minutes after authenticated_at (2409 afterwards); 2408 before confirmation.',
        tags: ['verification'],
      },
    },
    async (request) => {
      const row = await ownVerification(request.params.receipt_id, request.project, 'RC_NOT_FOUND');
      if (row.status !== VerificationStatus.Verified || !row.authenticated_at) throw new ApiError('AUTH_NOT_CONFIRMED');
      const windowOver = deps.clock().getTime() > row.authenticated_at.getTime() + VERIFICATION_WINDOW_MS;
      if (windowOver || row.identifiers_purged_at) throw new ApiError('AUTH_EXPIRED');
      return renderVerificationResult(view(row, request, true));
    },
  );

  if (deps.config.sandbox && deps.sandboxUrl) {
    const sandboxUrl = deps.sandboxUrl;
    app.get<{ Querystring: { phone?: string } }>(
      '/sandbox/v1/sms',
      {
        config: { auth: 'project' },
        // The phone number is in the query string, and Fastify's "incoming request" line logs the URL.
        logLevel: 'warn',
        schema: {
          summary: 'Sandbox SMS inbox',
          description: 'Messages the sandbox identity gateway sent to a phone, newest first. Sandbox mode only.',
          tags: ['sandbox'],
        },
      },
      async (request) => {
        const phone = request.query.phone;
        if (typeof phone !== 'string' || !/^01\d{8,9}$/.test(phone)) {
          throw new ApiError('INVALID_REQUEST', { message: 'phone must be a mobile number of 10-11 digits.' });
        }
        const list = await fetchSandboxSms(sandboxUrl, phone);
        return { list: list.map((m) => ({ phone: m.phone, message: m.message, otp: m.otp, sent_at: formatTimestamp(m.sentAt) })) };
      },
    );
  }
}
