// The sandbox escrow PGs' notifications to paygate: a JSON body signed with HMAC-SHA256 over
// `<t>.<body>` in the header `x-sandbox-signature: t=<unix ms>,v1=<hex>`, keyed with a subkey of the
// token paygate shares with the sandbox. Both escrow adapters read them here.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { EscrowNotification } from './types.js';

/** A notification older (or further in the future) than this is refused: a replayed capture stays useless. */
const MAX_SKEW_MS = 10 * 60_000;

const notificationBody = z.object({
  notification_id: z.string().min(1).max(100),
  tid: z.string().min(1).max(100),
  merchant_ref: z.string().min(1).max(100),
  event: z.string().min(1).max(50),
  occurred_at: z.iso.datetime({ offset: true }),
});

export function notificationKey(sandboxToken: string): Buffer {
  return createHmac('sha256', sandboxToken).update('escrow-notification').digest();
}

export function createNotificationVerifier(sandboxToken: string | undefined, now: () => number = Date.now) {
  const key = sandboxToken === undefined ? undefined : notificationKey(sandboxToken);
  return (headers: Readonly<Record<string, string | string[] | undefined>>, rawBody: string): EscrowNotification | undefined => {
    if (key === undefined) return undefined;
    const header = headers['x-sandbox-signature'];
    const match = typeof header === 'string' ? /^t=(\d{1,16}),v1=([0-9a-f]{64})$/.exec(header) : null;
    if (!match) return undefined;
    const t = Number(match[1]);
    if (Math.abs(now() - t) > MAX_SKEW_MS) return undefined;
    const expected = createHmac('sha256', key).update(`${match[1]}.${rawBody}`).digest();
    const given = Buffer.from(match[2]!, 'hex');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawBody);
    } catch {
      return undefined;
    }
    const body = notificationBody.safeParse(parsed);
    if (!body.success) return undefined;
    return {
      notificationId: body.data.notification_id,
      gatewayTid: body.data.tid,
      merchantRef: body.data.merchant_ref,
      event: body.data.event,
      occurredAt: new Date(body.data.occurred_at),
    };
  };
}
