// A webhook receiver on loopback for the tour: it takes paygate's signed POSTs, checks each one's Standard Webhooks
// signature against the secrets it was given, answers 200 (verified) or 400 (not), and keeps what came so the tour
// can wait for a delivery. Run on its own it is README's receiver:
//   WEBHOOK_SECRETS="$MESSAGE_SECRET $PROJECT_SECRET" node --import tsx tools/tour/receiver.ts   (RECEIVER_PORT: 3000)
// and prints one line per delivery.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';

/** One POST the receiver took. */
export interface ReceivedDelivery {
  /** the path it was sent to: /message (the messaging webhook) or /project (the project's webhook_url) */
  readonly path: string;
  /** the webhook-id header: the delivery id, the same on every retry */
  readonly webhookId: string;
  /** whether one of the trusted secrets signed it */
  readonly verified: boolean;
  /** the JSON body (undefined when it was not JSON) */
  readonly body: Record<string, unknown> | undefined;
}

/** Bodies larger than this are refused: paygate's events are a few kilobytes. */
const MAX_BODY_BYTES = 1024 * 1024;

function readRaw(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error('body too large'));
        request.destroy();
      } else chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function parseJson(raw: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(raw);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** What a delivery is about, in a few words: its event name or webhook_type. */
export function describeDelivery(d: ReceivedDelivery): string {
  const body = d.body ?? {};
  const kind = body.webhook_type ?? body.event ?? '(no event name)';
  const code = body.event_code !== undefined ? ` ${String(body.event_code)}` : '';
  return `${String(kind)}${code}`;
}

export class WebhookReceiver {
  private readonly verifiers: Webhook[] = [];
  private readonly received: ReceivedDelivery[] = [];
  private readonly waiters = new Set<() => void>();

  private constructor(
    private readonly server: Server,
    readonly origin: string,
    private readonly onDelivery: (delivery: ReceivedDelivery) => void,
  ) {}

  /** Listens on 127.0.0.1:port (0: a free port the system picks). */
  static async listen(port: number, onDelivery: (delivery: ReceivedDelivery) => void = () => {}): Promise<WebhookReceiver> {
    let receiver: WebhookReceiver | undefined;
    const server = createServer((request, response) => {
      receiver!.handle(request).then(
        (status) => response.writeHead(status).end(),
        () => response.writeHead(400).end(),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    const { port: bound } = server.address() as AddressInfo;
    receiver = new WebhookReceiver(server, `http://127.0.0.1:${bound}`, onDelivery);
    return receiver;
  }

  /** Deliveries signed with this secret (`whsec_...`) verify from now on. */
  trust(secret: string): void {
    this.verifiers.push(new Webhook(secret));
  }

  /** Every delivery so far, in the order they came. */
  get deliveries(): readonly ReceivedDelivery[] {
    return this.received;
  }

  private async handle(request: IncomingMessage): Promise<number> {
    if (request.method !== 'POST') return 405;
    const raw = await readRaw(request);
    const headers = {
      'webhook-id': String(request.headers['webhook-id'] ?? ''),
      'webhook-timestamp': String(request.headers['webhook-timestamp'] ?? ''),
      'webhook-signature': String(request.headers['webhook-signature'] ?? ''),
    };
    // verified over the raw body exactly as it came, as a merchant's receiver must
    const verified = this.verifiers.some((verifier) => {
      try {
        verifier.verify(raw, headers);
        return true;
      } catch {
        return false;
      }
    });
    const delivery: ReceivedDelivery = {
      path: (request.url ?? '/').split('?')[0]!,
      webhookId: headers['webhook-id'],
      verified,
      body: parseJson(raw),
    };
    this.received.push(delivery);
    this.onDelivery(delivery);
    for (const wake of this.waiters) wake();
    return verified ? 200 : 400;
  }

  /**
   * The first delivery (already here or still to come) that `matches`; rejects after `timeoutMs`, or at once when
   * a matching one came with a signature that did not verify.
   */
  waitFor(what: string, matches: (delivery: ReceivedDelivery) => boolean, timeoutMs: number): Promise<ReceivedDelivery> {
    return new Promise((resolve, reject) => {
      const look = (): boolean => {
        const found = this.received.find(matches);
        if (!found) return false;
        finish();
        if (found.verified) resolve(found);
        else reject(new Error(`${what} came (webhook-id ${found.webhookId}) but its signature did not verify`));
        return true;
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`${what} did not come within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      const wake = () => void look();
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
      };
      this.waiters.add(wake);
      look();
    });
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function runStandalone(): Promise<void> {
  const port = Number(process.env.RECEIVER_PORT ?? 3000);
  const secrets = (process.env.WEBHOOK_SECRETS ?? '').split(/\s+/).filter((s) => s.length > 0);
  const receiver = await WebhookReceiver.listen(port, (d) => {
    const verdict = d.verified ? 'signature verified' : 'SIGNATURE NOT VERIFIED (answered 400)';
    process.stdout.write(`[receiver] POST ${d.path} ${describeDelivery(d)} webhook-id ${d.webhookId}: ${verdict}\n`);
  }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EADDRINUSE') throw err;
    process.stderr.write(
      `[receiver] port ${port} is in use: stop what holds it, or set RECEIVER_PORT (and use that port in the URLs)\n`,
    );
    process.exit(1);
  });
  for (const secret of secrets) receiver.trust(secret);
  const note = secrets.length === 0 ? ' (no WEBHOOK_SECRETS: every delivery is answered 400)' : '';
  process.stdout.write(`[receiver] listening on ${receiver.origin}, ${secrets.length} secret(s)${note}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await runStandalone();
