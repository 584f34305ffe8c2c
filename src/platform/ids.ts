// Identifiers and secrets. Ids look like the API family's: 24 lowercase hex characters.
// Secrets are high-entropy random strings, so a SHA-256 digest is a sufficient stored form;
// comparison is constant-time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** 24 lowercase hex characters (96 random bits): application ids, receipt ids, ... */
export function newId(): string {
  return randomBytes(12).toString('hex');
}

/** A random secret of `bytes` bytes, base64url encoded (client/secret/private keys, tokens). */
export function newSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Constant-time comparison of a presented secret with a stored SHA-256 hex digest. */
export function secretMatches(presented: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(presented), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
