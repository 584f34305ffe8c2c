// The HTTP contract of the sandbox fault routes: arm, list and disarm faults of the sandbox PGs for a merchant's
// own tests. The body is the validator's own documentation (./sandbox-faults.ts), never written here.
import { z } from 'zod';
import { EX, IDEMPOTENCY_ERRORS, type RouteContracts, timestamp } from '../platform/http-contract.js';
import { faultKindDoc, faultOperationDoc, sandboxFaultBody } from './sandbox-faults.js';

/**
 * What every route that calls a PG can answer besides its own refusals: the PG unreachable (9502) or silent (9504),
 * and, where an upstream provider stands in for the PG, its circuit open (9481) or its refusal of the project's keys
 * there (9478).
 */
export const PG_CALL_ERRORS = [
  'GATEWAY_UNAVAILABLE',
  'GATEWAY_TIMEOUT',
  'UPSTREAM_UNAVAILABLE',
  'UPSTREAM_KEYS_REFUSED',
] as const;

const sandboxFault = z.object({
  fault_id: z.string(),
  pg: z.string(),
  operation: faultOperationDoc,
  fault: faultKindDoc,
  count: z.number().int(),
  remaining: z.number().int(),
  created_at: timestamp,
});
const faultExample = {
  fault_id: 'flt_3f1c0d9a2b7e4c51a0d2e6f7',
  pg: 'sandbox_card',
  operation: 'charge',
  fault: 'timeout',
  count: 1,
  remaining: 1,
  created_at: EX.now,
};

export const gatewaysHttp: RouteContracts = {
  'POST /sandbox/v1/faults': {
    operationId: 'armSandboxFault',
    tag: 'sandbox',
    summary: 'Arm a sandbox PG fault',
    description:
      'Body {pg, operation, fault, count?: 1 (1-100)}. The next `count` calls of `operation` this project makes to ' +
      "the sandbox PG `pg` fail: timeout (the PG holds the request past paygate's timeout, then executes it), " +
      'error (HTTP 500, nothing executed), lost_response (the PG executes, the answer never arrives), drop ' +
      '(escrow_notification only: never sent). Operations: sandbox_card issue_billing_key, charge, cancel, ' +
      'destroy_billing_key, payment; sandbox_identity send_otp, resend_otp, confirm_otp; sandbox_escrow_a/b ' +
      'payment, cancel, shipping_start, escrow_status, escrow_notification. 201; 9470-9474 for bad input.',
    body: sandboxFaultBody,
    response: { status: 201, description: 'The armed fault', schema: sandboxFault },
    example: { request: { pg: 'sandbox_card', operation: 'charge', fault: 'timeout' }, response: faultExample },
    errors: [
      'SANDBOX_FAULT_INVALID',
      'SANDBOX_FAULT_PG_UNKNOWN',
      'SANDBOX_FAULT_OPERATION_UNSUPPORTED',
      'SANDBOX_FAULT_KIND_UNSUPPORTED',
      'SANDBOX_FAULTS_TOO_MANY',
      ...IDEMPOTENCY_ERRORS,
      'GATEWAY_UNAVAILABLE',
    ],
  },
  'GET /sandbox/v1/faults': {
    operationId: 'listSandboxFaults',
    tag: 'sandbox',
    summary: 'List armed sandbox faults',
    description: "The project's armed faults, oldest first.",
    response: { status: 200, description: 'The armed faults, oldest first', schema: z.object({ list: z.array(sandboxFault) }) },
    example: { response: { list: [faultExample] } },
    errors: ['GATEWAY_UNAVAILABLE'],
  },
  'DELETE /sandbox/v1/faults': {
    operationId: 'disarmSandboxFaults',
    tag: 'sandbox',
    summary: 'Disarm sandbox faults',
    description: 'Disarms every fault the project armed.',
    response: { status: 200, description: 'How many were disarmed', schema: z.object({ disarmed: z.number().int() }) },
    example: { response: { disarmed: 1 } },
    errors: ['GATEWAY_UNAVAILABLE'],
  },
};
