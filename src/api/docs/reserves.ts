// Documentation of the reserved-charge routes (extensions.md). The body is the validators' own documentation.
import { z } from 'zod';
import { chargeRequestStages } from '../../payments/billing-rules.js';
import { describeFields } from '../../platform/validation.js';
import { reserveRequestStages } from '../../reserves/rules.js';
import { feedbackTargetStages } from '../../webhooks/rules.js';
import { byId, EX, IDEMPOTENCY_ERRORS, type RouteDocs } from './route-doc.js';
import { chargeExample } from './routes-spec.js';
import { Reserve, resourceId, timestamp } from './schemas.js';

export const reserveRouteDocs: RouteDocs = {
  'POST /v2/subscribe/payment/reserve': {
    operationId: 'reserveCharge',
    tag: 'reserves',
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
    params: byId('reserve_id'),
    response: {
      status: 200,
      description: 'Revoked',
      schema: z.object({ reserve_id: resourceId, success: z.literal(true) }),
    },
    example: { response: { reserve_id: EX.reserveId, success: true } },
    errors: ['RESERVE_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID', 'RESERVE_NOT_REVOKABLE', 'SERVICE_UNAVAILABLE'],
  },

  // ---- subscription schedules
};
