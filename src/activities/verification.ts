import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { IdentityPerson, VerifiedPerson } from '../gateways/rules.js';
import type { GatewayRegistry, IdentityGateway } from '../gateways/index.js';
import type { UpstreamGateways } from '../upstream/index.js';
import type { WorkflowTimeStamp } from '../platform/temporal/sandbox-clock.js';
import type { VerificationRecords } from '../verification/contract.js';
import { callGateway } from './failures.js';

export interface VerificationActivityDeps {
  readonly gateways: GatewayRegistry;
  /** the projects' upstream providers: a verification a provider sent is resent and confirmed there */
  readonly upstream?: UpstreamGateways;
  readonly verifications: VerificationRecords;
  /** the sandbox clock in sandbox mode: what authenticated_at is read from */
  readonly clock?: () => Date;
}

/** What the workflow must still write itself when the step's own write did not happen. */
export interface StepRecorded {
  readonly recorded: boolean;
}

/**
 * A step's database write right after its gateway call, in the same activity: one task instead of two on the happy
 * path. The gateway's answer must not be lost to a database hiccup (a retry would repeat the call), so a failed
 * write is reported, not thrown, and the workflow records it with the store's own durable retries.
 */
async function recordAfter(write: () => Promise<void>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (err) {
    Context.current().log.warn("the step's write failed after its gateway call; the workflow records it", {
      error: err instanceof Error ? err.message : String(err),
    });
    return false;
  }
}

export function createVerificationActivities({
  gateways,
  upstream,
  verifications,
  clock = () => new Date(),
}: VerificationActivityDeps) {
  /** The project's provider for a verification it sent (`upstreamProject`), else the local PG. */
  const identityGateway = async (pg: string, upstreamProject?: string): Promise<IdentityGateway> => {
    const identity =
      upstreamProject === undefined ? gateways.get(pg)?.identity : (await upstream?.gateway(upstreamProject, pg))?.identity;
    // The API checked the PG before starting the workflow; a PG removed since is a configuration fault.
    if (!identity) throw ApplicationFailure.nonRetryable(`PG '${pg}' has no identity verification`, 'GatewayNotConfigured');
    return identity;
  };

  const activities = {
    // One activity per step (runs started since the one-activity-per-step patch): the gateway call and its write.

    /** Sends the OTP (idempotent by the receipt's key) and stores the tid. */
    async sendVerificationOtp(input: SendOtpInput & WorkflowTimeStamp): Promise<{ tid: string } & StepRecorded> {
      const { tid } = await activities.requestIdentityOtp(input);
      return { tid, recorded: await recordAfter(() => verifications.markOtpSent(input.receiptId, tid)) };
    },

    /** Stores the resend count first (it counts a resend that then fails), then resends. */
    async resendVerificationOtp(
      input: WorkflowTimeStamp & {
        receiptId: string;
        numberOfRealarms: number;
        pg: string;
        upstreamProject?: string;
        tid: string;
        idempotencyKey: string;
      },
    ): Promise<StepRecorded> {
      const recorded = await recordAfter(() => verifications.setRealarmCount(input.receiptId, input.numberOfRealarms));
      await activities.resendIdentityOtp(input);
      return { recorded };
    },

    /**
     * Confirms the OTP and stores the person sealed. The person reaches the workflow's history only when that write
     * failed (the workflow then writes it); a retry after a lost answer confirms again, and the PG answers a repeated
     * confirm with the same person, whose write is then a no-op.
     */
    async confirmVerificationOtp(
      input: WorkflowTimeStamp & {
        receiptId: string;
        pg: string;
        upstreamProject?: string;
        tid: string;
        otp: string;
      },
    ): Promise<{ authenticatedAt: string } & ({ recorded: true } | { recorded: false; person: VerifiedPerson })> {
      const person = await activities.confirmIdentityOtp(input);
      const authenticatedAt = clock();
      return (await recordAfter(() => verifications.markConfirmed(input.receiptId, person, authenticatedAt)))
        ? { authenticatedAt: authenticatedAt.toISOString(), recorded: true }
        : { authenticatedAt: authenticatedAt.toISOString(), recorded: false, person };
    },

    // The gateway calls and the writes one by one: what runs started before the patch schedule, and the writes
    // the workflow makes when a step's own write failed.

    async requestIdentityOtp(input: SendOtpInput): Promise<{ tid: string }> {
      const identity = await identityGateway(input.pg);
      return callGateway(() =>
        identity.requestOtp({
          idempotencyKey: `verification:${input.receiptId}:request`,
          merchantId: input.merchantId,
          person: input.person,
          type: input.type,
          clientIp: input.clientIp,
          ...(input.siteUrl !== undefined ? { siteUrl: input.siteUrl } : {}),
        }),
      );
    },

    async resendIdentityOtp(input: { pg: string; upstreamProject?: string; tid: string; idempotencyKey: string }): Promise<void> {
      const identity = await identityGateway(input.pg, input.upstreamProject);
      await callGateway(() => identity.resendOtp({ tid: input.tid, idempotencyKey: input.idempotencyKey }));
    },

    async confirmIdentityOtp(input: { pg: string; upstreamProject?: string; tid: string; otp: string }): Promise<VerifiedPerson> {
      const identity = await identityGateway(input.pg, input.upstreamProject);
      return callGateway(() => identity.confirmOtp({ tid: input.tid, otp: input.otp }));
    },

    async recordVerificationOtpSent(input: { receiptId: string; tid: string }): Promise<void> {
      await verifications.markOtpSent(input.receiptId, input.tid);
    },

    async recordVerificationRequestFailed(input: { receiptId: string; errorName: string; pgErrorCode?: string }): Promise<void> {
      await verifications.markRequestFailed(input.receiptId, input);
    },

    async recordVerificationRealarm(input: { receiptId: string; numberOfRealarms: number }): Promise<void> {
      await verifications.setRealarmCount(input.receiptId, input.numberOfRealarms);
    },

    async recordVerificationConfirmed(input: {
      receiptId: string;
      person: VerifiedPerson;
      authenticatedAt: string;
    }): Promise<void> {
      await verifications.markConfirmed(input.receiptId, input.person, new Date(input.authenticatedAt));
    },

    async recordVerificationExpired(input: { receiptId: string }): Promise<void> {
      await verifications.markExpired(input.receiptId);
    },

    async purgeVerificationIdentifiers(input: { receiptId: string }): Promise<void> {
      await verifications.purgeIdentifiers(input.receiptId);
    },
  };
  return activities;
}

interface SendOtpInput {
  receiptId: string;
  merchantId: string;
  pg: string;
  type: 'sms' | 'pass';
  person: IdentityPerson;
  clientIp: string;
  siteUrl?: string;
}

export type VerificationActivities = ReturnType<typeof createVerificationActivities>;
