// The admin CLI: `npm run admin -- projects <create|update|get|list|rotate-keys|rotate-webhook-secret|upstream-set|
// upstream-get|upstream-delete> [...]`, printing JSON.
//
// By default it calls the running server's admin API (PAYGATE_URL, default http://127.0.0.1:PORT)
// with ADMIN_TOKEN, which works whatever the database is (an embedded PGlite directory is held by
// the running server and must not be opened twice). With --direct it opens the configured database
// itself and runs the same project service the admin routes use — for a Postgres DATABASE_URL, or
// PGlite while the server is stopped.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { parseConfig, ConfigError, type Config } from '../platform/config/index.js';
import { ApiError } from '../platform/errors.js';
import { SCOPES } from '../projects/scopes.js';
import { validate } from '../platform/validation.js';
import {
  DEFAULT_ESCROW_RECONCILE_HOURS,
  DEFAULT_KEY_GRACE_HOURS,
  keyRotationSchema,
  MAX_ESCROW_RECONCILE_HOURS,
  projectCreateSchema,
  projectPatchSchema,
  renderProject,
} from '../projects/index.js';

/** The gateways --direct knows: the sandbox PGs served in-process, given to projects only in sandbox mode. */
const SANDBOX_PGS = ['sandbox_card', 'sandbox_noauto', 'sandbox_identity', 'sandbox_escrow_a', 'sandbox_escrow_b'] as const;

const USAGE = `usage: npm run admin -- projects <command> [options]

commands:
  create --name NAME [options]          create a project; prints its keys (shown only once)
  update APPLICATION_ID [options]       change a project
  get APPLICATION_ID                    show a project
  list                                  list projects
  rotate-keys APPLICATION_ID [--grace-hours N]
                                        new secret_key and private_key (shown only once); the old ones
                                        keep working N hours more (default ${DEFAULT_KEY_GRACE_HOURS}, 0 = stop now);
                                        every access token of the project is revoked
  rotate-webhook-secret APPLICATION_ID  a new signing secret for webhook_url and feedback_url deliveries (shown
                                        only once); the previous one keeps signing beside it for 24 hours
  upstream-set APPLICATION_ID --base-url URL --client-key KEY --pgs a,b [--message-url URL]
                                        route the project's PGs named in --pgs to a provider speaking this API;
                                        the provider's secret key is read from PAYGATE_UPSTREAM_SECRET_KEY (or
                                        --secret-key, which other users of this machine can see in ps)
  upstream-get APPLICATION_ID           show the project's provider (secret masked, the notification URL, its health)
  upstream-delete APPLICATION_ID        the project's PGs are local ones again

project options:
  --name NAME
  --seller true|false                   default true
  --scopes a,b,...                      default all: ${SCOPES.join(',')}
  --allowed-ips ip,cidr,...             default empty (any source IP); "" clears
  --api-version 2.5                     default 2.5
  --webhook-url URL                     "" clears; the first URL prints its signing secret (shown only once)
  --merchant-company-name, --merchant-addr1, --merchant-addr2, --merchant-zipcode, --merchant-phone
  --key-expires-at ISO-8601             "" clears
  --pgs a,b,...                         default all configured gateways (sandbox PGs in sandbox mode only)
  --escrow-reconcile-hours N            hours without a PG notification before an escrow order asks its PG
                                        (1-${MAX_ESCROW_RECONCILE_HOURS}, default ${DEFAULT_ESCROW_RECONCILE_HOURS}); orders paid afterwards use it

connection:
  --url URL        the server (default PAYGATE_URL or http://127.0.0.1:$ADMIN_PORT, else $PORT); needs ADMIN_TOKEN
  --direct         use the database directly (DATABASE_URL, or PGlite under DATA_DIR while the server is stopped)
`;

const OPTIONS = {
  name: { type: 'string' },
  seller: { type: 'string' },
  scopes: { type: 'string' },
  'allowed-ips': { type: 'string' },
  'api-version': { type: 'string' },
  'webhook-url': { type: 'string' },
  'merchant-company-name': { type: 'string' },
  'merchant-addr1': { type: 'string' },
  'merchant-addr2': { type: 'string' },
  'merchant-zipcode': { type: 'string' },
  'merchant-phone': { type: 'string' },
  'key-expires-at': { type: 'string' },
  pgs: { type: 'string' },
  'escrow-reconcile-hours': { type: 'string' },
  'grace-hours': { type: 'string' },
  'base-url': { type: 'string' },
  'client-key': { type: 'string' },
  'secret-key': { type: 'string' },
  'message-url': { type: 'string' },
  url: { type: 'string' },
  direct: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export class CliUsageError extends Error {
  override readonly name = 'CliUsageError';
}

type Values = Partial<Record<keyof typeof OPTIONS, string | boolean>>;

const list = (value: string): string[] =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

/** Turns flags into the JSON body the admin API takes (only the flags given). */
export function projectBodyFromFlags(values: Values): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const str = (key: keyof typeof OPTIONS): string | undefined => {
    const v = values[key];
    return typeof v === 'string' ? v : undefined;
  };
  if (str('name') !== undefined) body.name = str('name');
  const seller = str('seller');
  if (seller !== undefined) {
    if (seller !== 'true' && seller !== 'false') throw new CliUsageError('--seller must be true or false');
    body.seller = seller === 'true';
  }
  if (str('scopes') !== undefined) body.scopes = list(str('scopes')!);
  if (str('allowed-ips') !== undefined) body.allowed_ips = list(str('allowed-ips')!);
  if (str('api-version') !== undefined) body.api_version = str('api-version');
  if (str('webhook-url') !== undefined) body.webhook_url = str('webhook-url') === '' ? null : str('webhook-url');
  if (str('key-expires-at') !== undefined) body.key_expires_at = str('key-expires-at') === '' ? null : str('key-expires-at');
  if (str('pgs') !== undefined) body.pgs = list(str('pgs')!);
  const reconcileHours = str('escrow-reconcile-hours');
  if (reconcileHours !== undefined) {
    if (!/^-?\d+$/.test(reconcileHours.trim()))
      throw new CliUsageError('--escrow-reconcile-hours must be a whole number of hours');
    // the bounds are the server's to check: out of range is its catalog error, as for every field
    body.escrow_reconcile_hours = Number(reconcileHours);
  }
  const merchant: Record<string, string> = {};
  for (const field of ['company-name', 'addr1', 'addr2', 'zipcode', 'phone'] as const) {
    const value = str(`merchant-${field}`);
    if (value !== undefined) merchant[field.replace('-', '_')] = value;
  }
  if (Object.keys(merchant).length > 0) body.merchant = merchant;
  return body;
}

/**
 * The body of upstream-set: the flags given (the server checks them, as for every field) and the secret from the
 * environment unless --secret-key names it.
 */
export function upstreamBodyFromFlags(values: Values, env: NodeJS.ProcessEnv): Record<string, unknown> {
  const str = (key: keyof typeof OPTIONS) => (typeof values[key] === 'string' ? (values[key] as string) : undefined);
  const secret = str('secret-key') ?? env.PAYGATE_UPSTREAM_SECRET_KEY;
  if (secret === undefined) throw new CliUsageError('upstream-set needs the secret key in PAYGATE_UPSTREAM_SECRET_KEY');
  const body: Record<string, unknown> = { secret_key: secret };
  if (str('base-url') !== undefined) body.base_url = str('base-url');
  if (str('client-key') !== undefined) body.client_key = str('client-key');
  if (str('pgs') !== undefined) body.pgs = list(str('pgs')!);
  if (str('message-url') !== undefined) body.message_url = str('message-url');
  return body;
}

const UPSTREAM_ACTIONS = ['upstream-set', 'upstream-get', 'upstream-delete'] as const;

interface Command {
  readonly action:
    | 'create'
    | 'update'
    | 'get'
    | 'list'
    | 'rotate-keys'
    | 'rotate-webhook-secret'
    | (typeof UPSTREAM_ACTIONS)[number];
  readonly applicationId?: string;
  readonly body: Record<string, unknown>;
  readonly url?: string;
  readonly direct: boolean;
}

export function parseCommand(argv: readonly string[], env: NodeJS.ProcessEnv = {}): Command | 'help' {
  const { values, positionals } = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  if (values.help || positionals.length === 0) return 'help';
  const [resource, action, applicationId, ...rest] = positionals;
  if (resource !== 'projects') throw new CliUsageError(`unknown resource: ${resource}`);
  if (rest.length > 0) throw new CliUsageError(`unexpected arguments: ${rest.join(' ')}`);
  const connection = { direct: values.direct === true, ...(values.url !== undefined ? { url: values.url } : {}) };
  if (action === 'upstream-set' || action === 'upstream-get' || action === 'upstream-delete') {
    if (applicationId === undefined) throw new CliUsageError(`${action} needs an APPLICATION_ID`);
    const body = action === 'upstream-set' ? upstreamBodyFromFlags(values, env) : {};
    return { action, applicationId, body, ...connection };
  }
  const body = projectBodyFromFlags(values);
  const base = { body, ...connection };
  switch (action) {
    case 'create':
      if (applicationId !== undefined) throw new CliUsageError('create takes no positional argument');
      return { action, ...base };
    case 'update':
    case 'get':
    case 'rotate-webhook-secret':
      if (applicationId === undefined) throw new CliUsageError(`${action} needs an APPLICATION_ID`);
      return { action, applicationId, ...base };
    case 'list':
      return { action, ...base };
    case 'rotate-keys': {
      if (applicationId === undefined) throw new CliUsageError('rotate-keys needs an APPLICATION_ID');
      const grace = values['grace-hours'];
      if (grace !== undefined && !/^\d+$/.test(grace)) throw new CliUsageError('--grace-hours must be a whole number of hours');
      return { action, applicationId, ...base, body: grace === undefined ? {} : { grace_hours: Number(grace) } };
    }
    default:
      throw new CliUsageError(`unknown command: ${action ?? ''}`);
  }
}

async function runOverHttp(command: Command, config: Config, env: NodeJS.ProcessEnv): Promise<unknown> {
  if (config.adminTokenGenerated) {
    throw new CliUsageError('ADMIN_TOKEN is not set: export the token the server printed at start (or use --direct)');
  }
  const base = (command.url ?? env.PAYGATE_URL ?? `http://127.0.0.1:${config.admin?.port ?? config.port}`).replace(/\/+$/, '');
  const project = command.applicationId
    ? `/admin/v1/projects/${encodeURIComponent(command.applicationId)}`
    : '/admin/v1/projects';
  const upstream = (UPSTREAM_ACTIONS as readonly string[]).includes(command.action);
  const path =
    command.action === 'rotate-keys'
      ? `${project}/keys/rotate`
      : command.action === 'rotate-webhook-secret'
        ? `${project}/webhook/secret`
        : upstream
          ? `${project}/upstream`
          : project;
  const method = ['create', 'rotate-keys', 'rotate-webhook-secret'].includes(command.action)
    ? 'POST'
    : command.action === 'update'
      ? 'PATCH'
      : command.action === 'upstream-set'
        ? 'PUT'
        : command.action === 'upstream-delete'
          ? 'DELETE'
          : 'GET';
  const sendsBody = method !== 'GET' && method !== 'DELETE';
  const res = await request(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${config.adminToken}`,
      ...(sendsBody ? { 'content-type': 'application/json' } : {}),
    },
    ...(sendsBody ? { body: JSON.stringify(command.body) } : {}),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const answer: unknown = await res.body.json();
  if (res.statusCode >= 400) throw new HttpAnswerError(answer);
  return answer;
}

class HttpAnswerError extends Error {
  constructor(readonly answer: unknown) {
    super('the server refused the request');
  }
}

async function runDirect(command: Command, config: Config): Promise<unknown> {
  // no workflow engine here: the webhook service only stores URLs and secrets for the project service
  // loaded only here: the composition root pulls in the whole server (a second of start-up every call in HTTP mode)
  const { openDirectServices } = await import('../composition/index.js');
  const direct = await openDirectServices(config, SANDBOX_PGS);
  try {
    const { projects, upstream } = direct.services;
    switch (command.action) {
      case 'create': {
        const input = validate(projectCreateSchema, command.body);
        const { project, secrets } = await projects.create(input);
        return { ...renderProject(project), ...secrets };
      }
      case 'update': {
        const { project, webhookSecret } = await projects.update(
          command.applicationId!,
          validate(projectPatchSchema, command.body),
        );
        return { ...renderProject(project), ...(webhookSecret ? { webhook_secret: webhookSecret } : {}) };
      }
      case 'get':
        return renderProject(await projects.get(command.applicationId!));
      case 'list': {
        const list = await projects.list();
        return { list: list.map(renderProject), count: list.length };
      }
      case 'rotate-keys':
        // awaited here: the database closes in `finally`
        return await projects.rotateKeys(command.applicationId!, validate(keyRotationSchema, command.body));
      case 'rotate-webhook-secret':
        return await projects.rotateWebhookSecret(command.applicationId!);
      case 'upstream-set':
        return await upstream.configure(command.applicationId!, command.body);
      case 'upstream-get':
        return await upstream.get(command.applicationId!);
      case 'upstream-delete':
        return await upstream.remove(command.applicationId!);
    }
  } finally {
    await direct.close();
  }
}

/** Runs the CLI; returns the exit code. Output goes to the given streams (JSON on success). */
export async function runAdminCli(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  try {
    const command = parseCommand(argv, env);
    if (command === 'help') {
      out.write(USAGE);
      return 0;
    }
    const config = parseConfig(env);
    const result = command.direct ? await runDirect(command, config) : await runOverHttp(command, config, env);
    out.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (e) {
    if (e instanceof HttpAnswerError) {
      err.write(`${JSON.stringify(e.answer, null, 2)}\n`);
      return 1;
    }
    if (e instanceof ApiError) {
      err.write(`${JSON.stringify(e.toBody(), null, 2)}\n`);
      return 1;
    }
    if (e instanceof ConfigError || e instanceof CliUsageError) {
      err.write(`paygate admin: ${e.message}\n`);
      if (e instanceof CliUsageError) err.write(USAGE);
      return 2;
    }
    if (e instanceof TypeError && 'code' in e && String(e.code).startsWith('ERR_PARSE_ARGS')) {
      err.write(`paygate admin: ${e.message}\n${USAGE}`);
      return 2;
    }
    err.write(`paygate admin: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = await runAdminCli(process.argv.slice(2), process.env, process.stdout, process.stderr);
}
