// Stateless sandbox billing keys: an HMAC-SHA256-signed token carrying only display data and
// flags, so keys keep working across sandbox restarts (same secret) without storing anything.
// No raw card data is inside, not even encrypted.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

const PREFIX = 'sbk_';

export const billingKeyClaims = z.object({
  /** key id: what the revocation set remembers */
  kid: z.string().min(1),
  masked: z.string().min(1),
  issuer: z.string().min(1),
  kind: z.enum(['CREDIT', 'CHECK']),
  /** issued from the always-refuse test card: every charge is refused */
  refuse: z.boolean(),
  /** the card's expiry (end of its last valid month), epoch ms */
  exp: z.number().int(),
  /** issued from the evergreen test card: its expiry is never judged against the sandbox clock */
  evergreen: z.boolean().optional(),
  /** issuance time, epoch ms */
  iat: z.number().int(),
  /** the merchant that issued it (its calls can be faulted per merchant); absent in keys from before */
  mid: z.string().min(1).optional(),
});
export type BillingKeyClaims = z.infer<typeof billingKeyClaims>;

function sign(secret: string, payload: string): Buffer {
  return createHmac('sha256', secret).update(`sandbox-billing-key|${payload}`).digest();
}

export function encodeBillingKey(secret: string, claims: BillingKeyClaims): string {
  const payload = Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url');
  return `${PREFIX}${payload}.${sign(secret, payload).toString('base64url')}`;
}

/** The claims of a key this sandbox (same secret) issued, or undefined for anything else. */
export function decodeBillingKey(secret: string, token: string): BillingKeyClaims | undefined {
  if (!token.startsWith(PREFIX)) return undefined;
  const [payload, signature, extra] = token.slice(PREFIX.length).split('.');
  if (payload === undefined || signature === undefined || extra !== undefined) return undefined;
  // Compare the encoded strings: base64 decoding ignores trailing bits, so comparing bytes would
  // accept several spellings of one signature.
  const expected = Buffer.from(sign(secret, payload).toString('base64url'), 'utf8');
  const given = Buffer.from(signature, 'utf8');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  const claims = billingKeyClaims.safeParse(json);
  return claims.success ? claims.data : undefined;
}
