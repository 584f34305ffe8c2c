// The HTTP contract of the reserved-charge routes (extensions.md): reserve, look up, revoke. The body is the
// validators' own documentation: the charge's stages (payments), the reserve's (./rules.ts) and the feedback target's.
import { z } from 'zod';
import { chargeRequestStages } from '../payments/billing-rules.js';
import { chargeExample } from '../payments/index.js';
import {
  byId,
  component,
  EX,
  IDEMPOTENCY_ERRORS,
  metadata,
  type RouteContracts,
  resourceId,
  timestamp,
  won,
} from '../platform/http-contract.js';
import { describeFields } from '../platform/validation.js';
import { feedbackTargetStages } from '../webhooks/rules.js';
import { reserveRequestStages } from './rules.js';

const Reserve = component(
  'Reserve',
  z.object({
    reserve_id: resourceId,
    order_id: z.string(),
    price: won,
    tax_free: won,
    order_name: z.string(),
    user: z.record(z.string(), z.unknown()),
    metadata,
    feedback_url: z.string().optional(),
    content_type: z.string().optional(),
    status: z.enum(['reserved', 'executing', 'paid', 'failed', 'revoked']),
    reserve_requested_at: timestamp,
    reserve_execute_at: timestamp,
    reserve_started_at: timestamp.optional(),
    reserve_finished_at: timestamp.optional(),
    reserve_revoked_at: timestamp.optional(),
    receipt_id: resourceId.optional().describe('once paid'),
    error_code: z.string().optional().describe('once failed'),
    pg_error_code: z.string().optional(),
  }),
);

export const reservesHttp: RouteContracts = {
  'POST /v2/subscribe/payment/reserve': {
    operationId: 'reserveCharge',
    tag: 'reserves',
    summary: 'Reserve a billing-key charge',
    description:
      'Body as POST /v2/subscribe/payment plus reserve_execute_at (ISO 8601 with an offset, after now and at most 1 year ' +
      'ahead, else 9442), user?, items?. Checks the charge fields in the charge order, then the billing key (2309, 1225, ' +
      '9423) and the order_id (9410: used by a receipt or another reserve). The charge is made once at ' +
      'reserve_execute_at through the charge path, with this order_id; its result (the receipt, or the failed ' +
      'reserve) goes to feedback_url as a signed webhook delivery.',
    // the charge's fields, the reserve's, then feedback_url and content_type: what the route checks, in order
    body: describeFields([...chargeRequestStages, ...reserveRequestStages, ...feedbackTargetStages]),
    response: {
      status: 200,
      description: 'The reserve; the charge runs at reserve_execute_at',
      schema: z.object({ reserve_id: resourceId, reserve_execute_at: timestamp }),
    },
    example: {
      request: { ...chargeExample, order_id: 'order-1002', reserve_execute_at: EX.later },
      response: { reserve_id: EX.reserveId, reserve_execute_at: EX.later },
    },
    errors: [
      'SUBSCRIBE_BK_NOT_FOUND',
      'RC_NAME_BLANK',
      'RC_O_ID_BLANK',
      'INVALID_REQUEST',
      'RESERVE_EXECUTE_AT_INVALID',
      'APP_KEY_CHAIN_SESSION_INVALID',
      'BILLING_KEY_DESTROYED',
      'ORDER_ID_DUPLICATED',
      ...IDEMPOTENCY_ERRORS,
      'SERVICE_UNAVAILABLE',
    ],
  },
  'GET /v2/subscribe/payment/reserve/:reserve_id': {
    operationId: 'getReserve',
    tag: 'reserves',
    summary: 'Reserved charge lookup',
    description:
      'status reserved | executing | paid | failed | revoked, the reserve_* times reached so far, receipt_id once ' +
      'paid, error_code / pg_error_code once failed. 9440 unknown, 1225 another project.',
    params: byId('reserve_id'),
    response: { status: 200, description: 'The reserved charge', schema: Reserve },
    example: {
      response: {
        reserve_id: EX.reserveId,
        order_id: 'order-1002',
        price: 1000,
        tax_free: 0,
        order_name: 'Monthly plan, June',
        user: {},
        metadata: {},
        reserve_requested_at: EX.now,
        reserve_execute_at: EX.later,
        status: 'reserved',
      },
    },
    errors: ['RESERVE_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID'],
  },
  'DELETE /v2/subscribe/payment/reserve/:reserve_id': {
    operationId: 'revokeReserve',
    tag: 'reserves',
    summary: 'Revoke a reserved charge',
    description: 'Only a reserve still reserved; 9441 once revoked or executing (nothing changes). 9440, 1225.',
    params: byId('reserve_id'),
    response: {
      status: 200,
      description: 'Revoked',
      schema: z.object({ reserve_id: resourceId, success: z.literal(true) }),
    },
    example: { response: { reserve_id: EX.reserveId, success: true } },
    errors: ['RESERVE_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID', 'RESERVE_NOT_REVOKABLE', 'SERVICE_UNAVAILABLE'],
  },
};
