// Projects: creating and changing a merchant application and its keys, for the admin API and the admin
// CLI alike. Secrets are generated here and returned once; only their hashes are stored. The project's
// webhook_url gets its own signing secret (sealed in its webhook endpoint, src/webhooks/service.ts),
// returned once when the first URL is stored and by the webhook secret rotation.
import { z } from 'zod';
import { ApiError } from '../platform/errors.js';
import { hashSecret, newId, newSecret } from '../platform/ids.js';
import { isIpOrCidr } from '../platform/ip.js';
import { keyExpired } from './access.js';
import { SCOPES } from './scopes.js';
import { formatOptionalTimestamp, formatTimestamp } from '../platform/time.js';
import { toProject, type Project } from './store.js';
import type { ProjectStore } from './store.js';

const merchantSchema = z.strictObject({
  company_name: z.string().max(200).optional(),
  addr1: z.string().max(500).optional(),
  addr2: z.string().max(500).optional(),
  zipcode: z.string().max(20).optional(),
  phone: z.string().max(40).optional(),
});

/** Hours without a PG notification before an escrow order asks its PG (the column's check holds the same bounds). */
export const DEFAULT_ESCROW_RECONCILE_HOURS = 72;
export const MIN_ESCROW_RECONCILE_HOURS = 1;
export const MAX_ESCROW_RECONCILE_HOURS = 8760;

const projectFields = {
  name: z.string().trim().min(1).max(200),
  seller: z.boolean(),
  scopes: z.array(z.enum(SCOPES)).max(SCOPES.length),
  allowed_ips: z.array(z.string().refine(isIpOrCidr, { message: 'expected an IP address or CIDR' })).max(100),
  api_version: z.string().regex(/^\d{1,2}\.\d{1,2}$/, 'expected a version like 2.5'),
  webhook_url: z
    .url({ protocol: /^https?$/ })
    .max(2000)
    .nullable()
    .describe(
      'https to a host whose every address is global unicast, resolved when saved and again at every delivery ' +
        '(sandbox mode: loopback too, over http or https); otherwise 3028 WEBHOOK_URL_INVALID and nothing is saved',
    ),
  merchant: merchantSchema,
  key_expires_at: z.iso.datetime({ offset: true }).nullable(),
  pgs: z.array(z.string().min(1).max(100)).max(50),
  escrow_reconcile_hours: z.number().int().min(MIN_ESCROW_RECONCILE_HOURS).max(MAX_ESCROW_RECONCILE_HOURS),
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
  escrow_reconcile_hours: projectFields.escrow_reconcile_hours.optional(),
});

export const projectPatchSchema = projectCreateSchema.partial();

/** How long the replaced keys keep working after a rotation, unless the caller says otherwise. */
export const DEFAULT_KEY_GRACE_HOURS = 24;
export const MAX_KEY_GRACE_HOURS = 720;

export const keyRotationSchema = z.strictObject({
  grace_hours: z.number().int().min(0).max(MAX_KEY_GRACE_HOURS).optional(),
});
export type KeyRotationInput = z.infer<typeof keyRotationSchema>;

/** What a rotation returns, once: the new keys and until when the old ones still work. */
export interface RotatedKeys {
  readonly application_id: string;
  readonly client_key: string;
  readonly secret_key: string;
  readonly private_key: string;
  /** absent when the old keys stopped at once (grace_hours 0) */
  readonly previous_keys_expire_at?: string;
}

export type ProjectCreateInput = z.infer<typeof projectCreateSchema>;
export type ProjectPatchInput = z.infer<typeof projectPatchSchema>;

export interface ProjectSecrets {
  readonly client_key: string;
  readonly secret_key: string;
  readonly private_key: string;
  /** the webhook_url's signing secret, when the project was created with a webhook_url */
  readonly webhook_secret?: string;
}

/** A project after a change; `webhookSecret` when this change stored its first webhook_url (shown once). */
export interface ProjectUpdate {
  readonly project: Project;
  readonly webhookSecret?: string;
}

/** What the webhook secret rotation returns, once. */
export interface RotatedWebhookSecret {
  readonly application_id: string;
  readonly webhook_secret: string;
  /** the previous secret keeps signing beside the new one until then */
  readonly previous_webhook_secret_expires_at?: string;
}

/** The sandbox PGs' names start with this (as their receipts' `sandbox: true` does, src/payments/receipts.ts). */
const SANDBOX_PG_PREFIX = 'sandbox_';

function checkPgs(pgs: readonly string[], knownPgs: readonly string[]): void {
  const unknown = pgs.filter((pg) => !knownPgs.includes(pg));
  if (unknown.length > 0) {
    throw new ApiError('INVALID_REQUEST', { payloadMessage: `pgs: unknown gateway ${unknown.join(', ')}` });
  }
}

export interface ProjectService {
  create(input: ProjectCreateInput): Promise<{ project: Project; secrets: ProjectSecrets }>;
  update(applicationId: string, patch: ProjectPatchInput): Promise<ProjectUpdate>;
  /** PROJECT_NOT_FOUND when there is none */
  get(applicationId: string): Promise<Project>;
  list(): Promise<Project[]>;
  /**
   * New secret and private keys (returned once); the old ones keep working for `grace_hours`
   * (default 24, 0 = stop now); every access token of the project is revoked and every session on it ended.
   * PROJECT_NOT_FOUND.
   */
  rotateKeys(applicationId: string, input: KeyRotationInput): Promise<RotatedKeys>;
  /** A new webhook signing secret (returned once); the previous one signs beside it for 24 hours. PROJECT_NOT_FOUND. */
  rotateWebhookSecret(applicationId: string): Promise<RotatedWebhookSecret>;
}

/** The project's webhook signing secret as the admin API shows it, once. */
export interface ProjectWebhookSecret {
  readonly secret: string;
  /** the previous secret keeps signing until then (after a rotation of a secret that existed) */
  readonly previousSecretExpiresAt?: Date;
}

/**
 * The project's webhook_url endpoint and its signing secret, kept by the webhooks area (its service implements
 * this; the composition root hands it in). A port, not an import: webhooks deliver to projects and read them,
 * so projects depend on no webhook code.
 */
export interface ProjectWebhooks {
  /**
   * Checks the admin API's webhook_url under the rule deliveries connect under: the mode's URL rules, then every
   * address the host resolves to (3028); nothing is written.
   */
  checkProjectUrl(url: string): Promise<void>;
  /**
   * Stores the project's webhook_url (null clears it; a URL re-enables a disabled one and clears its failure
   * count). Returns the signing secret when this call issued it (the first URL), else undefined.
   */
  setProjectUrl(applicationId: string, url: string | null): Promise<string | undefined>;
  /** A new secret for the project's webhook_url and feedback_url deliveries; the previous one signs 24 h more. */
  rotateProjectSecret(applicationId: string): Promise<ProjectWebhookSecret>;
}

/**
 * The sessions open on a project outside the API (the sandbox dashboard's, kept by the platform's session store; the
 * composition root hands this in). A port: projects end them without knowing where or how they are kept.
 */
export interface ProjectSessions {
  /** Ends every session on the project, whoever signed in (its keys, or an admin who picked it). */
  endProjectSessions(applicationId: string): Promise<void>;
}

/** Whether a change stops the project's keys: their expiry moved to now or before, or every scope taken away. */
function disables(patch: ProjectPatchInput, now: Date): boolean {
  const expiresNow = patch.key_expires_at != null && keyExpired({ key_expires_at: new Date(patch.key_expires_at) }, now);
  return expiresNow || (patch.scopes !== undefined && patch.scopes.length === 0);
}

export function createProjectService(deps: {
  readonly stores: { readonly projects: ProjectStore };
  readonly webhooks: ProjectWebhooks;
  /** ended on every key rotation (any grace) and when a change disables the project */
  readonly sessions: ProjectSessions;
  /** the configured gateway names: the default `pgs` and what a project may be given */
  readonly knownPgs: readonly string[];
  /** sandbox mode: only then may a project get (and gets by default) the sandbox PGs */
  readonly sandbox: boolean;
  readonly clock: () => Date;
}): ProjectService {
  const { projects } = deps.stores;
  // outside sandbox mode a sandbox PG that "approves" every charge must never reach a project
  const knownPgs = deps.sandbox ? deps.knownPgs : deps.knownPgs.filter((pg) => !pg.startsWith(SANDBOX_PG_PREFIX));
  return {
    async create(input) {
      const pgs = input.pgs ?? [...knownPgs];
      checkPgs(pgs, knownPgs);
      if (input.webhook_url) await deps.webhooks.checkProjectUrl(input.webhook_url);
      const keys = {
        client_key: newSecret(18),
        secret_key: newSecret(32),
        private_key: newSecret(32),
      };
      const now = deps.clock();
      const project = await projects.insert({
        application_id: newId(),
        name: input.name,
        client_key: keys.client_key,
        secret_key_hash: hashSecret(keys.secret_key),
        private_key_hash: hashSecret(keys.private_key),
        seller: input.seller ?? true,
        scopes: JSON.stringify(input.scopes ?? SCOPES),
        allowed_ips: JSON.stringify(input.allowed_ips ?? []),
        api_version: input.api_version ?? '2.5',
        webhook_url: input.webhook_url ?? null,
        merchant: JSON.stringify(input.merchant ?? {}),
        key_expires_at: input.key_expires_at ? new Date(input.key_expires_at) : null,
        pgs: JSON.stringify(pgs),
        escrow_reconcile_hours: input.escrow_reconcile_hours ?? DEFAULT_ESCROW_RECONCILE_HOURS,
        created_at: now,
        updated_at: now,
      });
      const webhookSecret = input.webhook_url
        ? await deps.webhooks.setProjectUrl(project.application_id, input.webhook_url)
        : undefined;
      return { project, secrets: { ...keys, ...(webhookSecret ? { webhook_secret: webhookSecret } : {}) } };
    },

    async update(applicationId, patch) {
      if (patch.pgs !== undefined) checkPgs(patch.pgs, knownPgs);
      if (patch.webhook_url) await deps.webhooks.checkProjectUrl(patch.webhook_url);
      const project = await projects.update(applicationId, {
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
        // applies to escrow orders paid from now on: each order's workflow keeps the value it started with
        ...(patch.escrow_reconcile_hours !== undefined ? { escrow_reconcile_hours: patch.escrow_reconcile_hours } : {}),
        updated_at: deps.clock(),
      });
      if (!project) throw new ApiError('PROJECT_NOT_FOUND');
      if (disables(patch, deps.clock())) await deps.sessions.endProjectSessions(applicationId);
      if (patch.webhook_url === undefined) return { project };
      const webhookSecret = await deps.webhooks.setProjectUrl(applicationId, patch.webhook_url);
      return { project, ...(webhookSecret ? { webhookSecret } : {}) };
    },

    async get(applicationId) {
      const row = await projects.findById(applicationId);
      if (!row) throw new ApiError('PROJECT_NOT_FOUND');
      return toProject(row);
    },

    list: () => projects.list(),

    async rotateKeys(applicationId, input) {
      const graceHours = input.grace_hours ?? DEFAULT_KEY_GRACE_HOURS;
      const secretKey = newSecret(32);
      const privateKey = newSecret(32);
      const now = deps.clock();
      const previousKeysExpireAt = graceHours > 0 ? new Date(now.getTime() + graceHours * 3_600_000) : null;
      const project = await projects.rotateKeys(applicationId, {
        secretKeyHash: hashSecret(secretKey),
        privateKeyHash: hashSecret(privateKey),
        previousKeysExpireAt,
        now,
      });
      if (!project) throw new ApiError('PROJECT_NOT_FOUND');
      // with any grace: the old keys may still call the API for a while, but nothing signed in with them stays open
      await deps.sessions.endProjectSessions(applicationId);
      return {
        application_id: project.application_id,
        client_key: project.client_key,
        secret_key: secretKey,
        private_key: privateKey,
        ...(previousKeysExpireAt ? { previous_keys_expire_at: formatTimestamp(previousKeysExpireAt) } : {}),
      };
    },

    async rotateWebhookSecret(applicationId) {
      if (!(await projects.findById(applicationId))) throw new ApiError('PROJECT_NOT_FOUND');
      const rotated = await deps.webhooks.rotateProjectSecret(applicationId);
      return {
        application_id: applicationId,
        webhook_secret: rotated.secret,
        ...(rotated.previousSecretExpiresAt
          ? { previous_webhook_secret_expires_at: formatTimestamp(rotated.previousSecretExpiresAt) }
          : {}),
      };
    },
  };
}

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
    escrow_reconcile_hours: project.escrow_reconcile_hours,
    created_at: formatTimestamp(project.created_at),
    updated_at: formatTimestamp(project.updated_at),
  };
  if (project.webhook_url !== null) view.webhook_url = project.webhook_url;
  const expires = formatOptionalTimestamp(project.key_expires_at);
  if (expires !== undefined) view.key_expires_at = expires;
  // shown while a rotation's grace period may still run; the old keys stop at this time
  const previousKeys = formatOptionalTimestamp(project.previous_keys_expire_at);
  if (previousKeys !== undefined) view.previous_keys_expire_at = previousKeys;
  return view;
}
