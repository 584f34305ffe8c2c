// Graceful shutdown: a request that arrives while the server drains gets the catalog's 9503 envelope (not
// Fastify's bare 503), with `Connection: close`, while the request already in flight completes.
import { connect } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { errorCatalog } from '../../src/platform/errors.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/** Splits a raw HTTP/1.1 byte stream holding Content-Length responses into status, headers and body. */
function parseResponses(raw: string): { status: number; headers: Record<string, string>; body: string }[] {
  const out = [];
  let rest = raw;
  while (rest.length > 0) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) break;
    const [statusLine, ...lines] = rest.slice(0, headEnd).split('\r\n');
    const headers = Object.fromEntries(
      lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
    );
    const length = Number(headers['content-length'] ?? 0);
    const bodyStart = headEnd + 4;
    out.push({ status: Number(statusLine?.split(' ')[1]), headers, body: rest.slice(bodyStart, bodyStart + length) });
    rest = rest.slice(bodyStart + length);
  }
  return out;
}

describe('shutdown', () => {
  let t: TestApp | undefined;
  afterAll(async () => {
    await t?.close().catch(() => undefined);
  });

  it('answers a request arriving during the drain with 9503 while the in-flight one completes', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let markStarted!: () => void;
    const started = new Promise<void>((resolve) => (markStarted = resolve));
    t = await buildTestApp({
      routes: async (app) => {
        app.get('/test/slow', { config: { auth: 'none' } }, async () => {
          markStarted();
          await gate;
          return { finished: true };
        });
      },
    });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (t.app.server.address() as { port: number }).port;

    const socket = connect(port, '127.0.0.1');
    let raw = '';
    socket.on('data', (d: Buffer) => (raw += d.toString()));
    const socketClosed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => undefined);
    socket.write('GET /test/slow HTTP/1.1\r\nHost: paygate\r\n\r\n');
    await started;

    const closing = t.close();
    await delay(50); // preClose has run; the socket is busy, so it is not reaped as idle
    socket.write('GET /health HTTP/1.1\r\nHost: paygate\r\n\r\n');
    await delay(50);
    release();

    await Promise.race([socketClosed, delay(10_000).then(() => socket.destroy())]);
    await closing;
    t = undefined;

    const [first, second] = parseResponses(raw);
    expect(first?.status).toBe(200);
    expect(JSON.parse(first?.body ?? '{}')).toEqual({ finished: true });
    expect(second?.status).toBe(503);
    expect(second?.headers.connection).toBe('close');
    expect(JSON.parse(second?.body ?? '{}')).toMatchObject({
      error_code: 'SERVICE_UNAVAILABLE',
      code: 9503,
      message: errorCatalog.SERVICE_UNAVAILABLE.message,
    });
  });
});
