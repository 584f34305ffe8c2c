// Projects: a merchant application with its keys and settings. One place for creating and
// changing them, used by the admin HTTP routes and the admin CLI alike.
import type { Kysely, Selectable } from 'kysely';
import { z } from 'zod';
import { ApiError } from '../domain/errors.js';
import { hashSecret, newId, newSecret } from '../domain/ids.js';
import { isIpOrCidr } from '../domain/ip.js';
import { SCOPES } from '../domain/scopes.js';
import { formatOptionalTimestamp, formatTimestamp } from '../domain/time.js';
import type { ProjectsTable } from './migrations/0001_platform.js';
import type { Tables } from './migrations/index.js';

export type ProjectRow = Selectable<ProjectsTable>;

/** The authenticated project as routes see it: the row without the key hashes, plus `id`. */
export type Project = Omit<ProjectRow, 'secret_key_hash' | 'private_key_hash'> & { readonly id: string };

const merchantSchema = z.strictObject({
  company_name: z.string().max(200).optional(),
  addr1: z.string().max(500).optional(),
  addr2: z.string().max(500).optional(),
  zipcode: z.string().max(20).optional(),
  phone: z.string().max(40).optional(),
});

const projectFields = {
  name: z.string().trim().min(1).max(200),
  seller: z.boolean(),
  scopes: z.array(z.enum(SCOPES)).max(SCOPES.length),
  allowed_ips: z.array(z.string().refine(isIpOrCidr, { message: 'expected an IP address or CIDR' })).max(100),
  api_version: z.string().regex(/^\d{1,2}\.\d{1,2}$/, 'expected a version like 2.5'),
  webhook_url: z
    .url({ protocol: /^https?$/ })
    .max(2000)
    .nullable(),
  merchant: merchantSchema,
  key_expires_at: z.iso.datetime({ offset: true }).nullable(),
  pgs: z.array(z.string().min(1).max(100)).max(50),
};

export const projectCreateSchema = z.strictObject({
  name: projectFields.name,
  seller: projectFields.seller.optional(),
  scopes: projectFields.scopes.optional(),
  allowed_ips: projectFields.allowed_ips.optional(),
  api_version: projectFields.api_version.optional(),
  webhook_url: projectFields.webhook_url.optional(),
  merchant: projectFields.merchant.optional(),
  key_expires_at: projectFields.key_expires_at.optional(),
  pgs: projectFields.pgs.optional(),
});

export const projectPatchSchema = projectCreateSchema.partial();

export type ProjectCreateInput = z.infer<typeof projectCreateSchema>;
export type ProjectPatchInput = z.infer<typeof projectPatchSchema>;

export interface ProjectSecrets {
  readonly client_key: string;
  readonly secret_key: string;
  readonly private_key: string;
}

function toProject(row: ProjectRow): Project {
  const { secret_key_hash: _s, private_key_hash: _p, ...rest } = row;
  return { ...rest, id: row.application_id };
}

function checkPgs(pgs: readonly string[], knownPgs: readonly string[]): void {
  const unknown = pgs.filter((pg) => !knownPgs.includes(pg));
  if (unknown.length > 0) {
    throw new ApiError('INVALID_REQUEST', { payloadMessage: `pgs: unknown gateway ${unknown.join(', ')}` });
  }
}

export interface ProjectServiceContext {
  readonly db: Kysely<Tables>;
  /** the configured gateway names: the default `pgs` and what a project may be given */
  readonly knownPgs: readonly string[];
  readonly now: () => Date;
}

export async function createProject(
  ctx: ProjectServiceContext,
  input: ProjectCreateInput,
): Promise<{ project: Project; secrets: ProjectSecrets }> {
  const pgs = input.pgs ?? [...ctx.knownPgs];
  checkPgs(pgs, ctx.knownPgs);
  const secrets: ProjectSecrets = {
    client_key: newSecret(18),
    secret_key: newSecret(32),
    private_key: newSecret(32),
  };
  const now = ctx.now();
  const row = await ctx.db
    .insertInto('projects')
    .values({
      application_id: newId(),
      name: input.name,
      client_key: secrets.client_key,
      secret_key_hash: hashSecret(secrets.secret_key),
      private_key_hash: hashSecret(secrets.private_key),
      seller: input.seller ?? true,
      scopes: JSON.stringify(input.scopes ?? SCOPES),
      allowed_ips: JSON.stringify(input.allowed_ips ?? []),
      api_version: input.api_version ?? '2.5',
      webhook_url: input.webhook_url ?? null,
      merchant: JSON.stringify(input.merchant ?? {}),
      key_expires_at: input.key_expires_at ? new Date(input.key_expires_at) : null,
      pgs: JSON.stringify(pgs),
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { project: toProject(row), secrets };
}

export async function updateProject(ctx: ProjectServiceContext, applicationId: string, patch: ProjectPatchInput): Promise<Project> {
  if (patch.pgs !== undefined) checkPgs(patch.pgs, ctx.knownPgs);
  const row = await ctx.db
    .updateTable('projects')
    .set({
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      ...(patch.seller !== undefined ? { seller: patch.seller } : {}),
      ...(patch.scopes !== undefined ? { scopes: JSON.stringify(patch.scopes) } : {}),
      ...(patch.allowed_ips !== undefined ? { allowed_ips: JSON.stringify(patch.allowed_ips) } : {}),
      ...(patch.api_version !== undefined ? { api_version: patch.api_version } : {}),
      ...(patch.webhook_url !== undefined ? { webhook_url: patch.webhook_url } : {}),
      ...(patch.merchant !== undefined ? { merchant: JSON.stringify(patch.merchant) } : {}),
      ...(patch.key_expires_at !== undefined
        ? { key_expires_at: patch.key_expires_at === null ? null : new Date(patch.key_expires_at) }
        : {}),
      ...(patch.pgs !== undefined ? { pgs: JSON.stringify(patch.pgs) } : {}),
      updated_at: ctx.now(),
    })
    .where('application_id', '=', applicationId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new ApiError('PROJECT_NOT_FOUND');
  return toProject(row);
}

export async function findProjectById(db: Kysely<Tables>, applicationId: string): Promise<ProjectRow | undefined> {
  return db.selectFrom('projects').selectAll().where('application_id', '=', applicationId).executeTakeFirst();
}

export async function findProjectByClientKey(db: Kysely<Tables>, clientKey: string): Promise<ProjectRow | undefined> {
  return db.selectFrom('projects').selectAll().where('client_key', '=', clientKey).executeTakeFirst();
}

export async function getProject(db: Kysely<Tables>, applicationId: string): Promise<Project> {
  const row = await findProjectById(db, applicationId);
  if (!row) throw new ApiError('PROJECT_NOT_FOUND');
  return toProject(row);
}

export async function listProjects(db: Kysely<Tables>): Promise<Project[]> {
  const rows = await db.selectFrom('projects').selectAll().orderBy('created_at', 'asc').execute();
  return rows.map(toProject);
}

export { toProject };

/** The admin view of a project (no secrets; they are shown once, at creation). */
export function renderProject(project: Project): Record<string, unknown> {
  const view: Record<string, unknown> = {
    application_id: project.application_id,
    name: project.name,
    client_key: project.client_key,
    seller: project.seller,
    scopes: project.scopes,
    allowed_ips: project.allowed_ips,
    api_version: project.api_version,
    merchant: project.merchant,
    pgs: project.pgs,
    created_at: formatTimestamp(project.created_at),
    updated_at: formatTimestamp(project.updated_at),
  };
  if (project.webhook_url !== null) view.webhook_url = project.webhook_url;
  const expires = formatOptionalTimestamp(project.key_expires_at);
  if (expires !== undefined) view.key_expires_at = expires;
  return view;
}
