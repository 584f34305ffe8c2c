// A hostile provider for the connector's tests: an HTTP hop on loopback in front of a real provider (B, another
// paygate) that passes every call on and, when armed for a path, misbehaves with B's real answer: trickles it one
// byte at a time (a provider that is slow to answer, with the money already moved), rewrites it (a provider that
// answers something other than what was asked), or hangs up without it (a lost answer). What B did is always real:
// only what A hears is changed.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export type Misbehaviour =
  /** B's answer, its status and headers at once, then its body one byte every `byteEveryMs` */
  | { readonly kind: 'trickle'; readonly byteEveryMs: number }
  /** B's answer with its JSON body rewritten */
  | { readonly kind: 'rewrite'; readonly rewrite: (body: Record<string, unknown>) => Record<string, unknown> }
  /** B does the call; A's connection is reset before a byte of the answer (a lost answer, the outcome unknown to A) */
  | { readonly kind: 'hangUp' };

interface Armed {
  readonly method: string;
  readonly path: string;
  /** matching calls still to pass through untouched before the misbehaviour starts */
  skip: number;
  remaining: number;
  readonly misbehaviour: Misbehaviour;
}

export interface HostileProvider {
  /** the address to configure as A's provider base_url */
  readonly url: string;
  /** the next `count` calls of `method path` (a path prefix) misbehave, after `skip` more pass through untouched */
  arm(method: string, path: string, misbehaviour: Misbehaviour, count?: number, skip?: number): void;
  /** trickled answers whose body was still being sent when A hung up (A cut the call at its deadline) */
  readonly cutTrickles: number;
  /** trickled answers sent to their last byte */
  readonly finishedTrickles: number;
  /** answers B gave that A never heard (hangUp) */
  readonly hungUp: number;
  /** calls B answered through this hop, by `METHOD path` */
  readonly calls: readonly string[];
  close(): Promise<void>;
}

export async function startHostileProvider(target: string): Promise<HostileProvider> {
  const armed: Armed[] = [];
  const calls: string[] = [];
  let cutTrickles = 0;
  let finishedTrickles = 0;
  let hungUp = 0;
  const open = new Set<ServerResponse>();

  const forward = async (req: IncomingMessage): Promise<{ status: number; headers: Headers; body: Buffer }> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string' && !['host', 'connection', 'content-length'].includes(name)) headers.set(name, value);
    }
    const res = await fetch(`${target}${req.url ?? '/'}`, {
      method: req.method ?? 'GET',
      headers,
      body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
      signal: AbortSignal.timeout(30_000),
    });
    return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
  };

  const misbehaviourFor = (method: string, path: string): Misbehaviour | undefined => {
    const hit = armed.find((a) => a.remaining > 0 && a.method === method && path.startsWith(a.path));
    if (!hit) return undefined;
    if (hit.skip > 0) {
      hit.skip -= 1;
      return undefined;
    }
    hit.remaining -= 1;
    return hit.misbehaviour;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method ?? 'GET';
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const misbehaviour = misbehaviourFor(method, path);
    const answer = await forward(req);
    calls.push(`${method} ${path}`);
    if (misbehaviour?.kind === 'hangUp') {
      hungUp += 1;
      res.socket?.destroy();
      return;
    }
    let body = answer.body;
    if (misbehaviour?.kind === 'rewrite') {
      body = Buffer.from(JSON.stringify(misbehaviour.rewrite(JSON.parse(body.toString('utf8')) as Record<string, unknown>)));
    }
    res.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
    if (misbehaviour?.kind !== 'trickle') {
      res.end(body);
      return;
    }
    open.add(res);
    res.flushHeaders();
    let sent = 0;
    const timer = setInterval(() => {
      res.write(body.subarray(sent, sent + 1));
      sent += 1;
      if (sent >= body.length) {
        clearInterval(timer);
        finishedTrickles += 1;
        res.end();
      }
    }, misbehaviour.byteEveryMs);
    // A hung up before the last byte: the call was cut
    res.on('close', () => {
      open.delete(res);
      if (sent < body.length) {
        clearInterval(timer);
        cutTrickles += 1;
      }
    });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(599);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    arm(method, path, misbehaviour, count = 1, skip = 0) {
      armed.push({ method, path, skip, remaining: count, misbehaviour });
    },
    get cutTrickles() {
      return cutTrickles;
    },
    get finishedTrickles() {
      return finishedTrickles;
    },
    get hungUp() {
      return hungUp;
    },
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
