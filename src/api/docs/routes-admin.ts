// Documentation of the admin API (ADMIN_TOKEN), the health check, the metrics and the document itself.
import { z } from 'zod';
import { keyRotationSchema, projectCreateSchema, projectPatchSchema } from '../../projects/index.js';
import { byId, EX, type RouteDocs } from './route-doc.js';
import { projectDeliveryQueryDoc } from '../../webhooks/rules.js';
import { deliveryExample, page, queuedExample } from './webhooks.js';
import { Delivery, DeliveryQueued, Project, ProjectWithSecrets, resourceId, timestamp } from './schemas.js';

const projectExample = {
  application_id: EX.applicationId,
  name: 'My shop',
  client_key: 'ubVNEkKC4JExsjTI3IxmyVvy',
  seller: true,
  scopes: ['billing_key', 'subscribe_payment', 'receipt', 'cancel', 'authentication', 'certificate', 'escrow_shipping_start'],
  allowed_ips: [],
  api_version: '2.5',
  merchant: { company_name: 'Sandbox Shop', addr1: 'Seoul, Gangnam-daero 1', addr2: '3F', zipcode: '06000', phone: '0212345678' },
  pgs: ['sandbox_card', 'sandbox_identity', 'sandbox_escrow_a'],
  escrow_reconcile_hours: 72,
  created_at: EX.now,
  updated_at: EX.now,
};

const applicationId = byId('application_id');

export const adminRouteDocs: RouteDocs = {
  'POST /admin/v1/projects': {
    operationId: 'createProject',
    tag: 'admin',
    body: projectCreateSchema,
    response: { status: 201, description: 'The project with its secrets, shown once', schema: ProjectWithSecrets },
    example: {
      request: { name: 'My shop', seller: true, merchant: projectExample.merchant },
      response: {
        ...projectExample,
        secret_key: 'umMz2_K-Z0vYSYQGdP6Nx0t1o7jUen98NuEXy082sIo',
        private_key: '1xHCo_x8aYV0XMhSGIHlZ7HepGlb517RrHNw6T0IlUk',
      },
    },
    errors: ['INVALID_REQUEST', 'WEBHOOK_URL_INVALID'],
  },
  'GET /admin/v1/projects': {
    operationId: 'listProjects',
    tag: 'admin',
    response: {
      status: 200,
      description: 'Every project',
      schema: z.object({ list: z.array(Project), count: z.number().int() }),
    },
    example: { response: { list: [projectExample], count: 1 } },
    errors: [],
  },
  'GET /admin/v1/projects/:application_id': {
    operationId: 'getProject',
    tag: 'admin',
    params: applicationId,
    response: { status: 200, description: 'The project', schema: Project },
    example: { response: projectExample },
    errors: ['PROJECT_NOT_FOUND', 'INVALID_REQUEST'],
  },
  'PATCH /admin/v1/projects/:application_id': {
    operationId: 'updateProject',
    tag: 'admin',
    params: applicationId,
    body: projectPatchSchema,
    response: {
      status: 200,
      description: 'The project; webhook_secret once, when the first webhook_url is set',
      schema: Project.extend({ webhook_secret: z.string().optional() }),
    },
    example: { request: { name: 'My shop (renamed)' }, response: { ...projectExample, name: 'My shop (renamed)' } },
    errors: ['PROJECT_NOT_FOUND', 'INVALID_REQUEST', 'WEBHOOK_URL_INVALID'],
  },
  'POST /admin/v1/projects/:application_id/keys/rotate': {
    operationId: 'rotateProjectKeys',
    tag: 'admin',
    params: applicationId,
    body: keyRotationSchema,
    response: {
      status: 200,
      description: 'The new keys, shown once',
      schema: z.object({
        application_id: resourceId,
        client_key: z.string(),
        secret_key: z.string(),
        private_key: z.string(),
        previous_keys_expire_at: timestamp.optional().describe('absent with grace_hours 0'),
      }),
    },
    example: {
      request: { grace_hours: 24 },
      response: {
        application_id: EX.applicationId,
        client_key: 'ubVNEkKC4JExsjTI3IxmyVvy',
        secret_key: '7CuiHSCNJKb5o8V7XlUzlqc6VT8HgH86ozq_WusLA9I',
        private_key: 'ncQqzGjv62xyoptAHb2RdexpOZLAGfCU-66j83Zs4T8',
        previous_keys_expire_at: EX.later,
      },
    },
    errors: ['PROJECT_NOT_FOUND', 'INVALID_REQUEST'],
  },
  'POST /admin/v1/projects/:application_id/webhook/secret': {
    operationId: 'rotateProjectWebhookSecret',
    tag: 'admin',
    params: applicationId,
    response: {
      status: 200,
      description: 'The new signing secret, shown once; the previous one signs 24 h more',
      schema: z.object({
        application_id: resourceId,
        webhook_secret: z.string(),
        previous_webhook_secret_expires_at: timestamp.optional(),
      }),
    },
    example: {
      response: {
        application_id: EX.applicationId,
        webhook_secret: 'whsec_1PAJTIx0kZLOqY2vs6QYBQZBjkR/Ua03vRP2ezV2thI=',
        previous_webhook_secret_expires_at: EX.later,
      },
    },
    errors: ['PROJECT_NOT_FOUND', 'INVALID_REQUEST'],
  },
  'GET /admin/v1/projects/:application_id/webhook/deliveries': {
    operationId: 'listProjectWebhookDeliveries',
    tag: 'admin',
    summary: "The deliveries of the project's webhook_url and feedback_url notifications",
    params: applicationId,
    querystring: projectDeliveryQueryDoc,
    response: {
      status: 200,
      description: 'Deliveries, newest first, with their attempts',
      schema: z.object({ list: z.array(Delivery.extend({ destination: z.enum(['project', 'feedback']) })), ...page }),
    },
    example: {
      response: {
        list: [{ ...deliveryExample, event: 'payment.feedback', event_code: 100, tags: [EX.receiptId], destination: 'feedback' }],
        page: 1,
        per: 20,
        count: 1,
      },
    },
    errors: ['PROJECT_NOT_FOUND', 'INVALID_REQUEST'],
  },
  'POST /admin/v1/projects/:application_id/webhook/deliveries/:delivery_id/retry': {
    operationId: 'retryProjectWebhookDelivery',
    tag: 'admin',
    summary: 'Retry a failed project delivery now, under the same webhook-id',
    params: z.object({ application_id: resourceId, delivery_id: resourceId }),
    response: { status: 200, description: 'The queued attempt', schema: DeliveryQueued },
    example: { response: queuedExample },
    errors: ['PROJECT_NOT_FOUND', 'WEBHOOK_DELIVERY_NOT_FOUND', 'WEBHOOK_DELIVERY_NOT_FAILED', 'SERVICE_UNAVAILABLE'],
  },

  // ---- system
  'GET /health': {
    operationId: 'getHealth',
    tag: 'system',
    summary: 'Readiness: the database and every component',
    response: { status: 200, description: 'Ready', schema: z.object({ status: z.literal('ok') }) },
    example: { response: { status: 'ok' } },
    errors: ['SERVICE_UNAVAILABLE'],
  },
  'GET /metrics': {
    operationId: 'getMetrics',
    tag: 'system',
    summary: 'Prometheus metrics of this process',
    response: {
      status: 200,
      description: 'The Prometheus text exposition format',
      schema: z.string(),
      contentType: 'text/plain; version=0.0.4; charset=utf-8',
    },
    example: {
      response:
        '# HELP paygate_http_requests_total HTTP requests answered, by method, route pattern and status code\n' +
        '# TYPE paygate_http_requests_total counter\n' +
        'paygate_http_requests_total{method="POST",route="/v2/subscribe/payment",status="200"} 1\n',
    },
    errors: [],
  },
  'GET /openapi.json': {
    operationId: 'getOpenApiDocument',
    tag: 'system',
    summary: 'This OpenAPI 3.1 document',
    response: {
      status: 200,
      description: 'The document',
      schema: z.looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.looseObject({}) }),
    },
    example: { response: { openapi: '3.1.0', info: { title: 'paygate', version: '0.1.0' }, paths: {} } },
    errors: [],
  },
};
