// Rules about who may use a key or a resource: pure checks on a project's settings.
import { ApiError } from '../platform/errors.js';
import { ipAllowed } from '../platform/ip.js';

/** 1203 with the requesting IP named, as the spec asks. */
export function assertIpAllowed(project: { readonly allowed_ips: readonly string[] }, ip: string): void {
  if (!ipAllowed(ip, project.allowed_ips)) {
    throw new ApiError('APP_FIREWALL_BLOCKED', { message: `The requesting IP ${ip} is not allowed.` });
  }
}

export function keyExpired(project: { readonly key_expires_at: Date | null }, now: Date): boolean {
  return project.key_expires_at !== null && project.key_expires_at.getTime() <= now.getTime();
}

/** 1225 when a resource (verification, receipt, ...) belongs to another project's key. */
export function assertOwnedBy(project: { readonly application_id: string }, ownerApplicationId: string): void {
  if (project.application_id !== ownerApplicationId) throw new ApiError('APP_KEY_CHAIN_SESSION_INVALID');
}
