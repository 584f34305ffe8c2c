// REST identity verification: request, resend (realarm), confirm, certificate lookup. Each verification
// is a workflow (src/workflows/verification.ts); this service checks what the database can answer, then
// drives the workflow with updates under a deadline and returns the stored row.
import { WorkflowNotFoundError } from '@temporalio/client';
import { VERIFICATION_WINDOW_MS, VerificationStatus } from './contract.js';
import { ApiError } from '../platform/errors.js';
import type { VerificationRequest, VerificationView } from './rules.js';
import { fetchSandboxSms, type SandboxSms } from '../gateways/index.js';
import type { Project } from '../projects/index.js';
import { merchantVerificationId, type VerificationRow } from './store.js';
import type { IdempotencyKeyProof } from '../platform/idempotency.js';

import { createVerificationContext, type VerificationDeps } from './context.js';
import { confirm, resend } from './otp-steps.js';
import { type CheckedPg, request } from './request.js';

export type { VerificationDeps } from './context.js';

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
  checkPg(project: Project, pg: string): Promise<CheckedPg>;
  /**
   * Starts the verification and waits until the SMS / push was sent; `checked` is checkPg's answer for the request's
   * pg (where it is sent), `sourceIp` the default client_ip.
   */
  request(project: Project, checked: CheckedPg, request: VerificationRequest, sourceIp: string): Promise<VerificationRow>;
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

export function createVerificationService(deps: VerificationDeps): VerificationService {
  const ctx = createVerificationContext(deps);
  const { store, handleOf, ownVerification } = ctx;
  const service: VerificationService = {
    async checkPg(project, pg) {
      const atProvider = (await deps.upstream?.gateway(project.application_id, pg))?.identity;
      if (atProvider) return { pg, atProvider };
      if (!deps.gateways.get(pg)?.identity) throw new ApiError('AUTH_CONFIRM_METHOD_NOT_FOUND');
      if (!project.pgs.includes(pg))
        throw new ApiError('RC_PG_NOT_FOUND', { message: `PG '${pg}' is not enabled for this project.` });
      return { pg, atProvider: undefined };
    },

    request: (project, checked, req, sourceIp) => request(ctx, project, checked, req, sourceIp),
    resend: (project, receiptId) => resend(ctx, project, receiptId),
    confirm: (project, receiptId, body, idempotencyKey) => confirm(ctx, project, receiptId, body, idempotencyKey),

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
