// A fault proxy between paygate (the relay) and its provider: node:net on loopback, one HTTP/1.1 request per
// connection (the proxy rewrites the request's Connection header to `close`, so the provider closes after its answer
// and the client never reuses the connection), with a fault switchable during a run and applied to a share of the new
// connections: added latency, an answer trickled a few bytes at a time, a reset in the middle of the answer's body, a
// 502 / 503 with an HTML body (the 502 after the provider executed the request: its answer is lost behind it), a black
// hole (accepts, reads, never answers), and the provider down (the port refuses connections).
import { createServer, type Server, type Socket, connect } from 'node:net';

export type Fault =
  | { readonly kind: 'none' }
  /** the provider's answer held back this long */
  | { readonly kind: 'latency'; readonly ms: number }
  /** the answer dribbled `bytes` bytes every `everyMs` */
  | { readonly kind: 'trickle'; readonly bytes: number; readonly everyMs: number }
  /** the request reaches the provider; its answer's head and part of its body reach the client, then a TCP reset */
  | { readonly kind: 'reset' }
  /** 502: the provider executed the request, its answer replaced; 503: the request never reached the provider */
  | { readonly kind: 'http5xx'; readonly status: 502 | 503 }
  /** accepted and read, never answered (until the client gives up) */
  | { readonly kind: 'blackhole' }
  /** connections refused */
  | { readonly kind: 'down' };

export type FaultKind = Fault['kind'];

export const FAULT_KINDS: readonly FaultKind[] = ['none', 'latency', 'trickle', 'reset', 'http5xx', 'blackhole', 'down'];

const HEAD_END = Buffer.from('\r\n\r\n');
const MAX_HEAD = 64 * 1024;

/** The request head with its Connection / Keep-Alive headers replaced by `connection: close`, and its body length. */
function closeAfterOne(head: Buffer): { head: Buffer; contentLength: number } {
  const lines = head.toString('latin1').split('\r\n');
  const kept = lines.filter((l, i) => i === 0 || !/^(connection|keep-alive)\s*:/i.test(l));
  const length = lines.find((l) => /^content-length\s*:/i.test(l));
  return {
    head: Buffer.from(`${kept.join('\r\n')}\r\nconnection: close\r\n\r\n`, 'latin1'),
    contentLength: length ? Number(length.split(':')[1]?.trim() ?? 0) : 0,
  };
}

const htmlAnswer = (status: 502 | 503) => {
  const body = `<html><head><title>${status}</title></head><body><h1>${status === 502 ? 'Bad Gateway' : 'Service Temporarily Unavailable'}</h1><hr><center>nginx</center></body></html>\n`;
  return `HTTP/1.1 ${status} ${status === 502 ? 'Bad Gateway' : 'Service Unavailable'}\r\ncontent-type: text/html\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
};

export class FaultProxy {
  /** connections handled, by the fault they got (`none`: passed through) */
  readonly applied: Record<FaultKind, number> = {
    none: 0,
    latency: 0,
    trickle: 0,
    reset: 0,
    http5xx: 0,
    blackhole: 0,
    down: 0,
  };
  private fault: Fault = { kind: 'none' };
  private share = 1;
  private listening = true;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly target: { readonly host: string; readonly port: number },
    private readonly random: () => number,
  ) {}

  /** Listens on loopback (`port`, or a free one) in front of `target`; `random` picks the connections a fault hits. */
  static async start(
    target: { readonly host: string; readonly port: number },
    options: { readonly port?: number; readonly random?: () => number } = {},
  ): Promise<FaultProxy> {
    let proxy: FaultProxy | undefined;
    const server = createServer((socket) => proxy!.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('the fault proxy has no port');
    proxy = new FaultProxy(server, address.port, target, options.random ?? Math.random);
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get current(): Fault {
    return this.fault;
  }

  /** From now on, `share` (0..1) of the new connections get `fault` (`down`: every connection is refused). */
  async set(fault: Fault, share = 1): Promise<void> {
    this.fault = fault;
    this.share = share;
    if (fault.kind === 'down' && this.listening) {
      this.listening = false;
      this.applied.down++;
      // stop accepting: the port refuses connections; the ones already open carry on
      await new Promise<void>((resolve) => this.server.close(() => resolve()));
    } else if (fault.kind !== 'down' && !this.listening) {
      await new Promise<void>((resolve, reject) => {
        this.server.once('error', reject);
        this.server.listen(this.port, '127.0.0.1', () => {
          this.server.off('error', reject);
          this.listening = true;
          resolve();
        });
      });
    }
  }

  /** Ends every connection and stops listening. */
  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    for (const s of this.sockets) s.destroy();
    if (this.listening) await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.listening = false;
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  private track(socket: Socket): Socket {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    return socket;
  }

  private accept(client: Socket): void {
    this.track(client);
    const fault: Fault = this.fault.kind !== 'down' && this.random() < this.share ? this.fault : { kind: 'none' };
    this.applied[fault.kind]++;
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf(HEAD_END);
      if (end < 0) {
        if (buffered.length > MAX_HEAD) client.destroy();
        return;
      }
      client.off('data', onData);
      client.pause();
      const { head, contentLength } = closeAfterOne(buffered.subarray(0, end));
      this.handle(client, fault, head, buffered.subarray(end + HEAD_END.length), contentLength);
    };
    client.on('data', onData);
  }

  private handle(client: Socket, fault: Fault, head: Buffer, bodyStart: Buffer, contentLength: number): void {
    if (fault.kind === 'blackhole') {
      // read whatever comes, answer nothing; the client's own timeout ends it
      client.resume();
      return;
    }
    if (fault.kind === 'http5xx' && fault.status === 503) {
      this.whenBodyRead(client, bodyStart.length, contentLength, () => client.end(htmlAnswer(503)));
      return;
    }
    const upstream = this.track(connect(this.target.port, this.target.host));
    client.on('close', () => upstream.destroy());
    upstream.write(Buffer.concat([head, bodyStart]));
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    client.resume();

    switch (fault.kind) {
      case 'none':
        upstream.on('data', (chunk: Buffer) => client.write(chunk));
        // the provider's end, passed on as it happened: a reset when its connection failed
        upstream.on('close', (hadError) => (hadError ? client.resetAndDestroy() : client.end()));
        return;
      case 'latency': {
        const held: Buffer[] = [];
        let released = false;
        let ended = false;
        upstream.on('data', (chunk: Buffer) => (released ? client.write(chunk) : held.push(chunk)));
        upstream.on('close', () => {
          ended = true;
          if (released) client.end();
        });
        this.later(fault.ms, () => {
          released = true;
          for (const c of held) client.write(c);
          if (ended) client.end();
        });
        return;
      }
      case 'trickle': {
        let pending = Buffer.alloc(0);
        let ended = false;
        upstream.on('data', (chunk: Buffer) => {
          pending = Buffer.concat([pending, chunk]);
        });
        upstream.on('close', () => {
          ended = true;
        });
        const tick = () => {
          if (client.destroyed) return;
          if (pending.length > 0) {
            client.write(pending.subarray(0, fault.bytes));
            pending = pending.subarray(fault.bytes);
          }
          if (ended && pending.length === 0) client.end();
          else this.later(fault.everyMs, tick);
        };
        this.later(fault.everyMs, tick);
        return;
      }
      case 'reset': {
        let answer = Buffer.alloc(0);
        const cut = () => {
          const end = answer.indexOf(HEAD_END);
          if (end < 0) return false;
          const body = answer.length - end - HEAD_END.length;
          // the head and at most half the body (at least its first byte when it has one)
          client.write(answer.subarray(0, end + HEAD_END.length + Math.max(Math.min(1, body), Math.floor(body / 2))), () =>
            client.resetAndDestroy(),
          );
          upstream.destroy();
          return true;
        };
        upstream.on('data', (chunk: Buffer) => {
          answer = Buffer.concat([answer, chunk]);
        });
        upstream.on('end', () => {
          if (!cut()) client.resetAndDestroy();
        });
        return;
      }
      case 'http5xx':
        // the provider executes the request and answers; the client gets the 502 instead
        upstream.resume();
        upstream.on('close', () => client.end(htmlAnswer(502)));
        return;
      case 'down':
        return;
    }
  }

  private whenBodyRead(client: Socket, already: number, contentLength: number, then: () => void): void {
    let read = already;
    if (read >= contentLength) {
      then();
      return;
    }
    client.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read >= contentLength) then();
    });
    client.resume();
  }
}
