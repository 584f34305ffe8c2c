import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { UpdateProof } from '../platform/temporal/messages.js';

// The reserved-charge workflow's contract, shared by the workflow, its activities and the API.

export const RESERVE_WORKFLOW_TYPE = 'reserveWorkflow';
export const reserveWorkflowId = (reserveId: string): string => `reserve:${reserveId}`;

export interface ReserveInput {
  readonly reserveId: string;
  /** ISO 8601: when the charge is made */
  readonly executeAt: string;
}

/** The reserved-charge workflow's signature, for the services that start it without importing workflow code. */
export type ReserveWorkflow = (input: ReserveInput) => Promise<ReserveExecution>;

export interface RevokeResult {
  readonly revokedAt: string;
}

/** What a reserve's execution came to. */
export interface ReserveExecution {
  readonly status: 'paid' | 'failed' | 'revoked';
  readonly receiptId?: string;
}

/** Failures handed back to the API: ApplicationFailure type = catalog error name. */
export type ReserveErrorName = 'RESERVE_NOT_REVOKABLE';

/** Revokes a reserve that has not started executing; carries a fresh proof (see UpdateProof). */
export const revokeReserveUpdate = defineUpdate<RevokeResult, [UpdateProof]>('revokeReserve');
/** The workflow's own view: reserved, revoking, executing, done (tests, diagnostics). */
export const reserveStateQuery = defineQuery<string>('reserveState');
