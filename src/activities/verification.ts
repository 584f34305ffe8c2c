import { ApplicationFailure } from '@temporalio/common';
import type { VerifiedPerson } from '../domain/verification.js';
import type { GatewayRegistry, IdentityGateway } from '../gateways/types.js';
import type { VerificationPerson, VerificationRecords } from '../contracts/verification.js';
import { callGateway } from './failures.js';

export interface VerificationActivityDeps {
  readonly gateways: GatewayRegistry;
  readonly verifications: VerificationRecords;
}

export function createVerificationActivities({ gateways, verifications }: VerificationActivityDeps) {
  const identityGateway = (pg: string): IdentityGateway => {
    const identity = gateways.get(pg)?.identity;
    // The API checked the PG before starting the workflow; a PG removed since is a configuration fault.
    if (!identity) throw ApplicationFailure.nonRetryable(`PG '${pg}' has no identity verification`, 'GatewayNotConfigured');
    return identity;
  };

  return {
    async requestIdentityOtp(input: {
      receiptId: string;
      merchantId: string;
      pg: string;
      type: 'sms' | 'pass';
      person: VerificationPerson;
      clientIp: string;
      siteUrl?: string;
    }): Promise<{ tid: string }> {
      return callGateway(() =>
        identityGateway(input.pg).requestOtp({
          idempotencyKey: `verification:${input.receiptId}:request`,
          merchantId: input.merchantId,
          name: input.person.name,
          phone: input.person.phone,
          identityNo: input.person.identityNo,
          carrier: input.person.carrier,
          type: input.type,
          clientIp: input.clientIp,
          ...(input.siteUrl !== undefined ? { siteUrl: input.siteUrl } : {}),
        }),
      );
    },

    async resendIdentityOtp(input: { pg: string; tid: string; idempotencyKey: string }): Promise<void> {
      await callGateway(() => identityGateway(input.pg).resendOtp({ tid: input.tid, idempotencyKey: input.idempotencyKey }));
    },

    async confirmIdentityOtp(input: { pg: string; tid: string; otp: string }): Promise<VerifiedPerson> {
      return callGateway(() => identityGateway(input.pg).confirmOtp({ tid: input.tid, otp: input.otp }));
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
}

export type VerificationActivities = ReturnType<typeof createVerificationActivities>;
