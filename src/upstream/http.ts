// The HTTP contract of the upstream connector's routes: a project's provider configuration (admin API) and the
// provider's notifications. The bodies are the very zod schemas the routes validate with (./rules.ts).
import { z } from 'zod';
import { byId, EX, type RouteContracts, timestamp } from '../platform/http-contract.js';
import { providerNotificationBody, upstreamConfigBody } from './rules.js';

const Upstream = z.object({
  application_id: z.string(),
  base_url: z.string(),
  client_key: z.string(),
  secret_key: z.string().describe('masked: the first 4 characters, then ********'),
  pgs: z.array(z.string()),
  message_url: z.string().optional(),
  notification_url: z.string().describe("register it at the provider as the project's webhook URL"),
  last_error: z
    .object({ code: z.number().int(), error_code: z.string(), message: z.string(), at: timestamp })
    .optional()
    .describe("the provider's last refusal of these keys (1204 / 1216), until the configuration is replaced"),
  health: z
    .object({
      circuit: z
        .enum(['closed', 'open', 'half_open'])
        .describe(
          'open: calls are answered 9481 at once, nothing is sent, until open_until; half_open: the next call is let ' +
            'through as a probe (an answer closes the circuit, a failure opens it again)',
        ),
      open_until: timestamp.optional().describe('open: when the next call is let through as a probe'),
      consecutive_failures: z.number().int().describe('calls in a row that got no answer'),
      last_success_at: timestamp.optional().describe("the provider's last answer (a result or a catalog error)"),
      last_failure: z
        .object({
          at: timestamp,
          class: z.enum(['unavailable', 'timeout']),
          message: z.string().describe('what went wrong, e.g. "upstream provider: HTTP 502 without a catalog error"'),
        })
        .optional()
        .describe('the last call without an answer'),
    })
    .describe(
      "the provider's health as the answering process saw it: each process keeps its own circuit, in memory " +
        '(UPSTREAM_CIRCUIT_FAILURES, UPSTREAM_CIRCUIT_OPEN_SECONDS); absent from the admin CLI in --direct mode',
    )
    .optional(),
  created_at: timestamp,
  updated_at: timestamp,
});

const upstreamExample = {
  application_id: EX.applicationId,
  base_url: 'https://api.provider.example',
  client_key: '6747e3a1c0ffee00000000ff',
  secret_key: 'Xk3v********',
  pgs: ['nicepay', 'kcp'],
  notification_url: `https://paygate.example.com/upstream/v1/notifications/${EX.applicationId}`,
  health: { circuit: 'closed', consecutive_failures: 0, last_success_at: EX.now },
  created_at: EX.now,
  updated_at: EX.now,
};

const applicationId = byId('application_id');

export const upstreamHttp: RouteContracts = {
  'PUT /admin/v1/projects/:application_id/upstream': {
    operationId: 'putProjectUpstream',
    tag: 'admin',
    summary: "Route the project's PGs to an upstream provider",
    params: applicationId,
    body: upstreamConfigBody,
    response: { status: 200, description: 'The configuration, its secret masked', schema: Upstream },
    example: {
      request: {
        base_url: upstreamExample.base_url,
        client_key: upstreamExample.client_key,
        secret_key: 'Xk3vQ9hWm2LzR8tY5nB7cD1fG4jK6pS0',
        pgs: upstreamExample.pgs,
      },
      response: upstreamExample,
    },
    errors: ['INVALID_REQUEST', 'UPSTREAM_URL_INVALID', 'PROJECT_NOT_FOUND'],
  },
  'GET /admin/v1/projects/:application_id/upstream': {
    operationId: 'getProjectUpstream',
    tag: 'admin',
    summary: "The project's upstream provider",
    params: applicationId,
    response: { status: 200, description: 'The configuration, its secret masked', schema: Upstream },
    example: { response: upstreamExample },
    errors: ['UPSTREAM_NOT_CONFIGURED', 'PROJECT_NOT_FOUND', 'INVALID_REQUEST'],
  },
  'DELETE /admin/v1/projects/:application_id/upstream': {
    operationId: 'deleteProjectUpstream',
    tag: 'admin',
    summary: "Make the project's PGs local ones again",
    params: applicationId,
    response: {
      status: 200,
      description: 'The configuration was deleted',
      schema: z.object({ application_id: z.string(), deleted: z.literal(true) }),
    },
    example: { response: { application_id: EX.applicationId, deleted: true } },
    errors: ['UPSTREAM_NOT_CONFIGURED', 'PROJECT_NOT_FOUND', 'INVALID_REQUEST'],
  },
  'POST /upstream/v1/notifications/:application_id': {
    operationId: 'receiveProviderNotification',
    tag: 'admin',
    summary: "The provider's notification about a payment (called by the provider)",
    params: applicationId,
    body: providerNotificationBody,
    response: {
      status: 200,
      description:
        'What paygate did after asking the provider about the receipt: moved an escrow order towards its status there ' +
        '(signalled), refreshed it (a refund made there), handed a charge whose answer was lost to its reconcile ' +
        'workflow, or nothing new. When the provider cannot be asked then, an open escrow order of the project is ' +
        'told to ask it itself until it answers (signalled); any other notification is answered with an error, for ' +
        'the provider to send again',
      schema: z.object({
        received: z.literal(true),
        receipt_id: z.string(),
        outcome: z.enum(['refreshed', 'reconciling', 'signalled', 'unchanged']),
      }),
    },
    example: {
      request: { receipt_id: EX.receiptId, status: 1 },
      response: { received: true, receipt_id: EX.receiptId, outcome: 'unchanged' },
    },
    errors: ['INVALID_REQUEST', 'RC_NOT_FOUND', 'UPSTREAM_NOT_CONFIGURED', 'GATEWAY_UNAVAILABLE', 'TOO_MANY_REQUESTS'],
  },
};
