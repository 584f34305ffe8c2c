// The flaky webhook receiver: logs every arrival by webhook-id, answers 500 to a fraction of the first arrivals of
// an id (a second failure in a row would put the delivery on the ladder's 5-minute rung, longer than a run's
// settle phase) and 200 otherwise. A receiver deduping by webhook-id counts an id once, at its first 2xx.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceiverLog {
  /** webhook-id -> arrivals (every POST, answered 2xx or not) */
  readonly arrivals: Map<string, number>;
  /** webhook-ids answered 2xx at least once (what a deduping receiver processed, once each) */
  readonly accepted: Set<string>;
  /** arrivals answered 500 on purpose */
  failedOnPurpose: number;
  /** webhook-id -> the body of its first arrival (what the event was about) */
  readonly bodies: Map<string, string>;
}

export class FlakyReceiver {
  readonly log: ReceiverLog = { arrivals: new Map(), accepted: new Set(), failedOnPurpose: 0, bodies: new Map() };
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(failFirstFraction: number, random: () => number): Promise<FlakyReceiver> {
    let receiver: FlakyReceiver | undefined;
    const server = createServer((req, res) => {
      const id = String(req.headers['webhook-id'] ?? '');
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const log = receiver!.log;
        if (!log.bodies.has(id)) log.bodies.set(id, Buffer.concat(chunks).toString('utf8'));
        const seen = log.arrivals.get(id) ?? 0;
        log.arrivals.set(id, seen + 1);
        if (seen === 0 && id !== '' && random() < failFirstFraction) {
          log.failedOnPurpose++;
          res.writeHead(500).end('flaky');
          return;
        }
        log.accepted.add(id);
        res.writeHead(200).end('ok');
      });
    });
    server.keepAliveTimeout = 1_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new FlakyReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
    return receiver;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
