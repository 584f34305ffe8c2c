// Typed client for the sandbox's internal escrow routes, which paygate's sandbox routes serve to merchants:
// the buyer's events (POST /_sandbox/escrow/events, the PG then notifies paygate) and what the PGs received
// for a payment (GET /_sandbox/pg-requests). Both need the token shared with the sandbox.
import { request } from 'undici';
import { z } from 'zod';
import type { SandboxEndpoint } from './sandbox-inbox.js';
import { GatewayUnavailableError } from './types.js';

const TIMEOUT_MS = 5_000;

const eventAnswer = z.object({ notification_id: z.string().nullable(), sent: z.boolean() });
const requestsAnswer = z.object({
  list: z.array(z.object({ pg: z.string(), operation: z.string(), body: z.unknown(), received_at: z.string() })),
});

async function call(sandbox: SandboxEndpoint, method: 'GET' | 'POST', url: URL, body?: unknown): Promise<unknown> {
  try {
    const res = await request(url, {
      method,
      headers: {
        authorization: `Bearer ${sandbox.token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body === undefined ? null : JSON.stringify(body),
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS,
    });
    if (res.statusCode !== 200 && res.statusCode !== 202) {
      await res.body.dump();
      throw new GatewayUnavailableError(`sandbox escrow: HTTP ${res.statusCode}`);
    }
    return await res.body.json();
  } catch (err) {
    if (err instanceof GatewayUnavailableError) throw err;
    throw new GatewayUnavailableError('sandbox escrow unreachable', { cause: err });
  }
}

/** The buyer acts on the order `tid`; the PG notifies paygate (unless a fault drops it). */
export async function sendSandboxBuyerEvent(
  sandbox: SandboxEndpoint,
  tid: string,
  event: string,
  duplicate: boolean,
): Promise<{ notificationId: string | null; sent: boolean }> {
  const parsed = eventAnswer.safeParse(
    await call(sandbox, 'POST', new URL('/_sandbox/escrow/events', sandbox.url), { tid, event, duplicate }),
  );
  if (!parsed.success) throw new GatewayUnavailableError('sandbox escrow: unexpected response shape');
  return { notificationId: parsed.data.notification_id, sent: parsed.data.sent };
}

/** What the sandbox PGs received for the payment `tid`, newest first. */
export async function fetchSandboxPgRequests(
  sandbox: SandboxEndpoint,
  tid: string,
): Promise<{ pg: string; operation: string; body: unknown; received_at: string }[]> {
  const url = new URL('/_sandbox/pg-requests', sandbox.url);
  url.searchParams.set('tid', tid);
  const parsed = requestsAnswer.safeParse(await call(sandbox, 'GET', url));
  if (!parsed.success) throw new GatewayUnavailableError('sandbox escrow: unexpected response shape');
  return parsed.data.list;
}
