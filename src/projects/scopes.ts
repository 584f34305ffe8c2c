// API scopes a project key can be granted. Only shipping start is named by the spec
// (escrow_shipping_start); the others follow the API areas so an operator can narrow a key.
//
// Scope check outcomes (see api/auth.ts):
//   - the key has no scopes at all            -> 1221 API_ROLE_NOT_SUPPORT (the key has no API role)
//   - the key lacks the route's scope         -> 1222 API_SCOPE_INVALID
//   - the key's validity has passed           -> 1218 APP_CLIENT_KEY_EXPIRED (refused at scope check)
//   - a legacy Bearer access token            -> carries its project's scopes, checked the same way;
//                                                only a route flagged `bearerWithoutScope` (shipping
//                                                start, as the spec says) takes a token without it
//
// Which route needs which scope (every project route declares one; test/api/route-scopes.test.ts):
//   billing_key        billing key issuance, lookup, destroy
//   subscribe_payment  charges with a billing key; the sandbox's payments
//   receipt            receipt lookup; the escrow events history, the sandbox pg-requests (reads of a payment)
//   cancel             cancels
//   authentication     verification request, resend, confirm; the sandbox SMS inbox (it shows OTPs)
//   certificate        verification result lookup
//   escrow_shipping_start  shipping start; the sandbox buyer's events (only shipping start takes any Bearer token)
//   message_webhook        its area's routes; the sandbox messages
export const SCOPES = [
  'billing_key',
  'subscribe_payment',
  'receipt',
  'cancel',
  'authentication',
  'certificate',
  'escrow_shipping_start',
  'message_webhook',
] as const;

export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
