// The OpenAPI 3.1 document (/openapi.json) and the API reference UI (/docs). @fastify/swagger collects the
// registered routes; its transform merges each route's contract (the areas' http.ts and ../http.ts: the request
// schemas its validators derive, response schemas as zod, one example, the catalog errors, its summary and
// description) and derives the security from the route's own auth
// config, so the document cannot claim an auth the route does not enforce. Nothing here touches a
// route's validation or serialization: the response schemas live only in the document (attached to a route's
// `schema.response`, Fastify would serialize its replies through them and drop whatever they do not declare).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fastifySwagger, { type SwaggerTransform, type SwaggerTransformObject } from '@fastify/swagger';
import scalarApiReference from '@scalar/fastify-api-reference';
import type { FastifyInstance } from 'fastify';
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { publicBaseUrlOf } from '../../platform/config/index.js';
import { errorCatalog, type ErrorName } from '../../platform/errors.js';
import { type DocTag, docRegistry, type RouteContract, type RouteContracts } from '../../platform/http-contract.js';
import { escrowHttp } from '../../escrow/index.js';
import { gatewaysHttp } from '../../gateways/index.js';
import { paymentsHttp } from '../../payments/index.js';
import { projectsHttp } from '../../projects/index.js';
import { reservesHttp } from '../../reserves/index.js';
import { schedulesHttp } from '../../schedules/index.js';
import { upstreamHttp } from '../../upstream/index.js';
import { verificationHttp } from '../../verification/index.js';
import { webhooksHttp } from '../../webhooks/index.js';
import { apiHttp } from '../http.js';

export const OPENAPI_VERSION = '3.1.0';
/** Where the reference UI is served; its own routes (the page, its script, the document it reads) live under it. */
export const DOCS_PREFIX = '/docs';
/** The icon of the reference and the dashboard (./favicon.svg), where browsers look for it. */
export const FAVICON_PATH = '/favicon.ico';
/** Browser pages (HTML and forms) and their icon, not the JSON API: left out of the document. */
export const UI_PREFIXES: readonly string[] = [DOCS_PREFIX, '/dashboard', FAVICON_PATH];

/** The UI's routes, and `GET /` (where a browser opening the server's address lands: src/api/routes/root.ts). */
export const isUiRoute = (url: string) =>
  url === '/' || UI_PREFIXES.some((prefix) => url === prefix || url.startsWith(`${prefix}/`) || url.startsWith(`${prefix}*`));

/** Every route's contract, by 'METHOD /path': each area's, and the API's own. */
export const routeDocs: RouteContracts = {
  ...paymentsHttp,
  ...verificationHttp,
  ...escrowHttp,
  ...reservesHttp,
  ...schedulesHttp,
  ...webhooksHttp,
  ...projectsHttp,
  ...upstreamHttp,
  ...gatewaysHttp,
  ...apiHttp,
};

const TAGS: readonly { name: DocTag; description: string }[] = [
  { name: 'billing', description: 'Card key-in billing keys, charges, receipts and cancels' },
  { name: 'reserves', description: 'Billing-key charges reserved for a later time' },
  { name: 'schedules', description: 'Subscription schedules: recurring charges with dunning' },
  { name: 'verification', description: 'SMS / pass identity verification' },
  { name: 'escrow', description: 'Escrow shipping start, order events, PG notifications' },
  { name: 'message webhooks', description: 'The messaging sub-service webhook: configuration, deliveries, retries' },
  { name: 'sandbox', description: 'Sandbox-mode helpers: payments, buyer events, SMS inbox, clock' },
  { name: 'auth', description: 'The legacy access token' },
  { name: 'admin', description: 'Projects, keys and signing secrets (ADMIN_TOKEN)' },
  { name: 'system', description: 'Health and this document' },
];

/**
 * The order the reference lists the shared schemas in, as TAGS orders the operations. The areas' http.ts register
 * them as their modules load, an order the import graph makes (and an entry point could change), not the reader;
 * a component not named here follows these, in that order.
 */
const COMPONENT_ORDER: readonly string[] = [
  'ApiError',
  'Receipt',
  'BillingKey',
  'VerificationRequested',
  'VerificationResult',
  'Reserve',
  'Schedule',
  'ScheduleCharge',
  'Project',
  'ProjectWithSecrets',
  'WebhookConfig',
  'Delivery',
  'DeliveryQueued',
];
const componentRank = (name: string) => {
  const rank = COMPONENT_ORDER.indexOf(name);
  return rank < 0 ? COMPONENT_ORDER.length : rank;
};

/** The errors a route's authentication can answer before its handler runs. */
export const AUTH_ERRORS: Readonly<Record<'project' | 'admin' | 'none', readonly ErrorName[]>> = {
  project: [
    'APP_AT_AUTHORIZE_HEADER_BLANK',
    'APP_AT_AUTHORIZE_TYPE_INVALID',
    'APP_CLIENT_KEY_NOT_FOUND',
    'APP_SK_NOT_MATCHED',
    'ACCESS_TOKEN_INVALID',
    'APP_FIREWALL_BLOCKED',
    'APP_CLIENT_KEY_EXPIRED',
    'APP_KEY_CHAIN_EXPIRED',
    'API_ROLE_NOT_SUPPORT',
    'API_SCOPE_INVALID',
    'TOO_MANY_REQUESTS',
  ],
  admin: ['ADMIN_UNAUTHORIZED', 'TOO_MANY_REQUESTS'],
  none: [],
};

/**
 * Any route can answer these: a request the platform refuses before the route's own checks (a path or query that is
 * not UTF-8, a body that is not JSON, a malformed path parameter), body limits, shutdown, an unexpected failure.
 */
export const PLATFORM_ERRORS: readonly ErrorName[] = [
  'INVALID_REQUEST',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'INTERNAL_ERROR',
  'SERVICE_UNAVAILABLE',
];

/** Every catalog error a route can answer: its own, its authentication's, and the platform's. */
export function documentedErrors(doc: { readonly errors: readonly ErrorName[] }, auth: string | undefined): readonly ErrorName[] {
  return [...doc.errors, ...AUTH_ERRORS[(auth ?? 'project') as keyof typeof AUTH_ERRORS], ...PLATFORM_ERRORS];
}

const IDEMPOTENCY_HEADER = z.object({
  'idempotency-key': z
    .string()
    .max(255)
    .optional()
    .describe('Replays the first answer for the same key and body (24 h); the same key with another body is 9422'),
});

const zodTransform = createJsonSchemaTransform({ schemaRegistry: docRegistry });
const zodTransformObject = createJsonSchemaTransformObject({ schemaRegistry: docRegistry });

export function errorResponses(names: readonly ErrorName[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorName[]>();
  for (const name of new Set(names)) {
    const { status } = errorCatalog[name];
    byStatus.set(status, [...(byStatus.get(status) ?? []), name]);
  }
  const responses: Record<string, unknown> = {};
  for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b)) {
    const examples = Object.fromEntries(group.map((name) => [name, { $ref: `#/components/examples/${name}` }]));
    responses[String(status)] = {
      description: group.map((name) => `${errorCatalog[name].code} ${name}`).join(', '),
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ApiError' }, examples } },
    };
  }
  return responses;
}

type RouteConfig = { auth?: 'project' | 'admin' | 'none'; scope?: string; bearerWithoutScope?: boolean; adminToo?: boolean };

function securityOf(config: RouteConfig): Record<string, string[]>[] {
  const auth = config.auth ?? 'project';
  if (auth === 'none') return [];
  if (auth === 'admin') return [{ adminToken: [] }];
  return [{ basic: [] }, { bearer: [] }, ...(config.adminToo ? [{ adminToken: [] }] : [])];
}

function documented(doc: RouteContract, method: string, config: RouteConfig, schema: Record<string, unknown>) {
  const auth = config.auth ?? 'project';
  const { hide: _hide, response: _response, ...own } = schema;
  const scopeNote = config.scope
    ? `\n\nScope: \`${config.scope}\`${config.bearerWithoutScope ? ' (any Bearer access token is accepted too)' : ''}.`
    : '';
  return {
    ...own,
    summary: doc.summary,
    description: `${doc.description ?? doc.summary}${scopeNote}`.trim(),
    operationId: doc.operationId,
    tags: [doc.tag],
    security: securityOf(config),
    ...(config.scope ? { 'x-paygate-scope': config.scope } : {}),
    ...(doc.params ? { params: doc.params } : {}),
    ...(doc.querystring ? { querystring: doc.querystring } : {}),
    ...(doc.body ? { body: doc.body } : {}),
    ...(method === 'POST' && auth === 'project' ? { headers: IDEMPOTENCY_HEADER } : {}),
    response: {
      [doc.response.status]: doc.response.schema,
      ...(doc.errorAnswer ? { [doc.errorAnswer.status]: doc.errorAnswer.schema } : {}),
    },
  };
}

/** Merges the documentation of the route (when there is one) into what @fastify/swagger documents. */
export const transform: SwaggerTransform = (input) => {
  const { route, url } = input;
  const method = (Array.isArray(route.method) ? route.method[0] : route.method) as string;
  if (isUiRoute(url)) return { schema: { ...input.schema, hide: true } as typeof input.schema, url };
  const doc = routeDocs[`${method} ${url}`];
  if (!doc) return zodTransform(input);
  const config = (route.config ?? {}) as RouteConfig;
  const merged = documented(doc, method, config, (input.schema ?? {}) as Record<string, unknown>);
  const transformed = zodTransform({ ...input, schema: merged } as Parameters<SwaggerTransform>[0]);
  const schema = transformed.schema as unknown as Record<string, unknown>;
  const body = schema.body as Record<string, unknown> | undefined;
  if (body && doc.example.request !== undefined) schema.body = { ...body, examples: [doc.example.request] };
  const transformedAnswers = schema.response as Record<string, unknown>;
  const success = transformedAnswers[String(doc.response.status)];
  const errors = errorResponses(documentedErrors(doc, config.auth)) as Record<string, { content: Record<string, object> }>;
  const widened = doc.errorAnswer && errors[String(doc.errorAnswer.status)];
  if (doc.errorAnswer && widened) {
    const json = widened.content['application/json']!;
    widened.content['application/json'] = { ...json, schema: transformedAnswers[String(doc.errorAnswer.status)] };
  }
  schema.response = {
    [doc.response.status]: {
      description: doc.response.description,
      content: { [doc.response.contentType ?? 'application/json']: { schema: success, example: doc.example.response } },
    },
    ...errors,
  };
  return { schema, url };
};

function referencedComponents(document: unknown): Set<string> {
  const text = JSON.stringify(document);
  return new Set([...text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)].map((m) => decodeURIComponent(m[1]!)));
}

/** Adds the registry's components and the tags; drops the unused input twins the zod transform creates. */
export const transformObject: SwaggerTransformObject = (input) => {
  const document = zodTransformObject(input) as Record<string, unknown> & { components: { schemas: Record<string, unknown> } };
  const used = referencedComponents({ ...document, components: undefined });
  // components may reference each other (Receipt inside BillingKey): keep what the kept ones reference too
  let grew = true;
  while (grew) {
    grew = false;
    for (const name of used) {
      for (const inner of referencedComponents(document.components.schemas[name])) {
        if (!used.has(inner)) {
          used.add(inner);
          grew = true;
        }
      }
    }
  }
  const schemas = Object.fromEntries(
    Object.entries(document.components.schemas)
      .filter(([name]) => used.has(name))
      .sort(([a], [b]) => componentRank(a) - componentRank(b)),
  );
  // one example per catalog error, referenced by the operations that can answer it
  const examples = Object.fromEntries(
    (Object.keys(errorCatalog) as ErrorName[]).map((name) => {
      const { code, message } = errorCatalog[name];
      return [name, { summary: `${code} ${name}`, value: { error_code: name, code, message } }];
    }),
  );
  return { ...document, tags: [...TAGS], components: { ...document.components, schemas, examples } };
};

/**
 * @fastify/swagger with the document's fixed parts; register before the routes (it collects them as they register).
 * `servers` is this process's {base_url} (publicBaseUrlOf: PUBLIC_BASE_URL, or loopback on PORT in sandbox mode),
 * the one gateway_url is built from, so the reference's request samples name a URL that answers.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: OPENAPI_VERSION,
      servers: [
        {
          url: publicBaseUrlOf(app.deps.config),
          description: app.deps.config.publicBaseUrl ? 'PUBLIC_BASE_URL' : 'this sandbox (loopback, PORT)',
        },
      ],
      info: {
        title: 'paygate',
        version: '0.1.0',
        description:
          'Card key-in billing, identity verification, escrow, reserved and recurring charges, message webhooks. ' +
          'Every error is a catalog error `{error_code, code, message}`; each operation lists the ones it can answer.',
      },
      components: {
        securitySchemes: {
          basic: { type: 'http', scheme: 'basic', description: 'client_key:secret_key of a project' },
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'legacy access token from POST /v2/request/token (30 minutes, the project scopes)',
          },
          adminToken: { type: 'http', scheme: 'bearer', description: 'the ADMIN_TOKEN of the server (admin API only)' },
        },
      },
    },
    transform,
    transformObject,
  });
}

/**
 * The reference UI at /docs. It serves its own script from node_modules (js/scalar.js, under the prefix) and
 * the document it reads (/docs/openapi.json); the configuration turns off everything that would reach the
 * internet: the default fonts, the request proxy, telemetry, the client button, and the "Ask AI" agent (a Scalar
 * cloud service, which Scalar switches on by itself when the page is opened on localhost). The plugin is held at the
 * newest release whose dependencies all run on Node 20 (later ones require Node 22).
 */
/** The policy of what the reference page is not: its script, the document, YAML. */
const DOCS_OTHER_POLICY = "default-src 'none'; frame-ancestors 'none'";

/**
 * The reference page's policy: Scalar's bundle from this server (`/docs/js/scalar.js`), the inline script that
 * starts it by its hash (taken from the page as sent, so it follows the plugin's markup), the document fetched
 * from this server; styles Scalar inserts at run time (inline `<style>` elements), images and fonts as data: URLs
 * inside them. Nothing else, from nowhere else; never in a frame, no <base>, no form posts.
 */
export function docsPagePolicy(html: string): string {
  const hashes = [...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/gi)].map(
    (m) => `'sha256-${createHash('sha256').update(m[1]!).digest('base64')}'`,
  );
  return [
    "default-src 'none'",
    `script-src 'self' ${hashes.join(' ')}`.trim(),
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** What /docs shows while Scalar loads: a line in the system font, and the document for those who want it now. */
const DOCS_LOADING =
  '<style>.paygate-loading{font:16px/1.5 system-ui,sans-serif;color:#333;max-width:40rem;margin:4rem auto;padding:0 1rem}' +
  '.paygate-loading a{color:inherit}</style>' +
  '<p class="paygate-loading" role="status">Loading the paygate API reference… ' +
  `(the OpenAPI document itself: <a href="${DOCS_PREFIX}/openapi.json">openapi.json</a>)</p>`;

export async function registerDocsUi(app: FastifyInstance): Promise<void> {
  await app.register(async (docs) => {
    // the UI is public, like /openapi.json: no project key
    docs.addHook('onRoute', (route) => {
      route.config = { ...(route.config as object), auth: 'none' } as typeof route.config;
    });
    // The plugin normalizes and re-serializes the whole document on every request; the routes cannot change
    // once the app is ready, so the first rendering of each document copy (JSON, YAML) is the answer from then on.
    const rendered = new Map<string, { readonly headers: Record<string, string>; readonly body: string }>();
    docs.addHook('onRequest', async (request, reply) => {
      const hit = rendered.get(request.routeOptions.url ?? '');
      if (hit) return reply.headers(hit.headers).send(hit.body);
    });
    docs.addHook('onSend', async (request, reply, payload) => {
      const url = request.routeOptions.url ?? '';
      if (/\/openapi\.(json|yaml)$/.test(url) && reply.statusCode === 200 && typeof payload === 'string' && !rendered.has(url)) {
        const headers: Record<string, string> = {};
        for (const name of [
          'content-type',
          'content-disposition',
          'access-control-allow-origin',
          'access-control-allow-methods',
        ]) {
          const value = reply.getHeader(name);
          if (value !== undefined) headers[name] = String(value);
        }
        rendered.set(url, { headers, body: payload });
      }
      return payload;
    });
    // The page is blank until Scalar's bundle (some MB) has run and the document has arrived; until then its mount
    // point shows what is coming and where the raw document is. Scalar empties the mount point when it mounts.
    docs.addHook('onSend', async (_request, reply, payload) => {
      const type = String(reply.getHeader('content-type') ?? '');
      if (!type.startsWith('text/html') || typeof payload !== 'string') return payload;
      return payload.replace('<div id="app"></div>', `<div id="app">${DOCS_LOADING}</div>`);
    });
    // What the page may load: its own script and document, the hash of the one inline script that starts it, and
    // nothing from anywhere else; no page may frame it (CSP frame-ancestors, X-Frame-Options for older browsers).
    docs.addHook('onSend', async (_request, reply, payload) => {
      const type = String(reply.getHeader('content-type') ?? '');
      void reply.header(
        'content-security-policy',
        type.startsWith('text/html') && typeof payload === 'string' ? docsPagePolicy(payload) : DOCS_OTHER_POLICY,
      );
      void reply.header('x-frame-options', 'DENY');
      void reply.header('x-content-type-options', 'nosniff');
      void reply.header('referrer-policy', 'no-referrer');
      return payload;
    });
    // the icon of the reference and the dashboard: an SVG kept beside this file, served where browsers ask for it
    const favicon = readFileSync(new URL('./favicon.svg', import.meta.url));
    docs.get(FAVICON_PATH, { schema: { hide: true } }, async (_request, reply) =>
      reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(favicon),
    );
    await docs.register(scalarApiReference, {
      routePrefix: DOCS_PREFIX,
      logLevel: 'warn',
      configuration: {
        pageTitle: 'paygate API reference',
        withDefaultFonts: false,
        telemetry: false,
        proxyUrl: '',
        hideClientButton: true,
        showDeveloperTools: 'never',
        agent: { disabled: true },
        favicon: FAVICON_PATH,
        persistAuth: false,
      },
    });
  });
}
