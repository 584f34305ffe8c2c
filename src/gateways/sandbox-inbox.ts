// Typed client for the sandbox's SMS inbox (GET /_sandbox/sms), which paygate's own
// GET /sandbox/v1/sms serves to merchants testing the identity flow. The sandbox's internal routes
// need the token shared with it (SANDBOX_TOKEN, or the per-process one of an in-process sandbox).
import { request } from 'undici';
import { z } from 'zod';
import { GatewayUnavailableError } from './types.js';

export interface SandboxSms {
  readonly phone: string;
  /** the full message text; for SMS OTPs it contains the code */
  readonly message: string;
  readonly otp: string;
  /** the verification transaction (gateway tid) the message belongs to */
  readonly tid: string;
  readonly sentAt: Date;
}

/** Where the sandbox is and the Bearer token of its internal routes. */
export interface SandboxEndpoint {
  readonly url: string;
  readonly token: string;
}

const inboxBody = z.object({
  list: z.array(
    z.object({
      phone: z.string(),
      message: z.string(),
      otp: z.string(),
      tid: z.string(),
      sent_at: z.iso.datetime({ offset: true }),
    }),
  ),
});

const INBOX_TIMEOUT_MS = 5_000;

/** Messages sent to `phone`, newest first. */
export async function fetchSandboxSms(sandbox: SandboxEndpoint, phone: string): Promise<SandboxSms[]> {
  const url = new URL('/_sandbox/sms', sandbox.url);
  url.searchParams.set('phone', phone);
  let json: unknown;
  try {
    const res = await request(url, {
      method: 'GET',
      headers: { authorization: `Bearer ${sandbox.token}` },
      headersTimeout: INBOX_TIMEOUT_MS,
      bodyTimeout: INBOX_TIMEOUT_MS,
    });
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new GatewayUnavailableError(`sandbox inbox: HTTP ${res.statusCode}`);
    }
    json = await res.body.json();
  } catch (err) {
    if (err instanceof GatewayUnavailableError) throw err;
    throw new GatewayUnavailableError('sandbox inbox unreachable', { cause: err });
  }
  const parsed = inboxBody.safeParse(json);
  if (!parsed.success) throw new GatewayUnavailableError('sandbox inbox: unexpected response shape');
  return parsed.data.list.map((m) => ({
    phone: m.phone,
    message: m.message,
    otp: m.otp,
    tid: m.tid,
    sentAt: new Date(m.sent_at),
  }));
}
