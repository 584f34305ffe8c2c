// The HTTP contract of the projects routes: the legacy access token (payment-api.md) and the admin API
// (ADMIN_TOKEN) that creates, lists, reads and changes projects and rotates their keys. The bodies are the very zod
// schemas the routes validate with, never written here.
import { z } from 'zod';
import { byId, component, EX, type RouteContracts, resourceId, timestamp } from '../platform/http-contract.js';
import { tokenRequestSchema } from './access-tokens.js';
import { SCOPES } from './scopes.js';
import { keyRotationSchema, projectCreateSchema, projectPatchSchema } from './service.js';

const merchant = z.object({
  company_name: z.string().optional(),
  addr1: z.string().optional(),
  addr2: z.string().optional(),
  zipcode: z.string().optional(),
  phone: z.string().optional(),
});

const projectFields = {
  application_id: resourceId,
  name: z.string(),
  client_key: z.string(),
  seller: z.boolean(),
  scopes: z.array(z.enum(SCOPES)),
  allowed_ips: z.array(z.string()),
  api_version: z.string(),
  merchant: merchant.optional(),
  webhook_url: z.string().optional(),
  key_expires_at: timestamp.optional(),
  previous_keys_expire_at: timestamp
    .optional()
    .describe('after a rotation with a grace period: when the previous keys stop working'),
  pgs: z.array(z.string()),
  escrow_reconcile_hours: z.number().int(),
  created_at: timestamp,
  updated_at: timestamp,
};

const Project = component('Project', z.object(projectFields));

const ProjectWithSecrets = component(
  'ProjectWithSecrets',
  z.object({
    ...projectFields,
    secret_key: z.string().describe('shown once'),
    private_key: z.string().describe('shown once; for POST /v2/request/token'),
    webhook_secret: z.string().optional().describe('shown once, when webhook_url is set'),
  }),
);

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

export const projectsHttp: RouteContracts = {
  'POST /v2/request/token': {
    operationId: 'requestToken',
    tag: 'auth',
    summary: 'Issue a legacy access token',
    body: tokenRequestSchema,
    response: {
      status: 200,
      description: 'A Bearer token valid for 30 minutes, carrying the project scopes',
      schema: z.object({ access_token: z.string(), expired_at: timestamp, expire_in: z.number().int() }),
    },
    example: {
      request: { application_id: EX.applicationId, private_key: '1xHCo_x8aYV0XMhSGIHlZ7HepGlb517RrHNw6T0IlUk' },
      response: { access_token: 'ivu7sdVkTymXh7RF5dOaTtHyBoBlztFnXSIzdEr2f9Q', expired_at: EX.now, expire_in: 1800 },
    },
    errors: [
      'INVALID_REQUEST',
      'APP_CLIENT_KEY_NOT_FOUND',
      'APP_SK_NOT_MATCHED',
      'APP_CLIENT_KEY_EXPIRED',
      'APP_KEY_CHAIN_EXPIRED',
      'APP_FIREWALL_BLOCKED',
      'TOO_MANY_REQUESTS',
    ],
  },

  // ---- the admin API (ADMIN_TOKEN)
  'POST /admin/v1/projects': {
    operationId: 'createProject',
    tag: 'admin',
    summary: 'Create a project',
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
    summary: 'List projects',
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
    summary: 'Project lookup',
    params: applicationId,
    response: { status: 200, description: 'The project', schema: Project },
    example: { response: projectExample },
    errors: ['PROJECT_NOT_FOUND', 'INVALID_REQUEST'],
  },
  'PATCH /admin/v1/projects/:application_id': {
    operationId: 'updateProject',
    tag: 'admin',
    summary: 'Change a project',
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
    summary: "Rotate the project's keys",
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
};
