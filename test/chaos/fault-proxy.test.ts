// The relay chaos suite's fault proxy (chaos/fault-proxy.ts) in front of a small HTTP server of the test's own: each
// fault as a client sees it, and whether the request reached the server behind it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultProxy } from '../../chaos/fault-proxy.js';

let server: Server;
let proxy: FaultProxy;
let served = 0;
const agent = new Agent({ keepAliveTimeout: 10_000 });
const ANSWER = JSON.stringify({ receipt_id: 'r-1', padding: 'x'.repeat(200) });

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      served++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  proxy = await FaultProxy.start({ host: '127.0.0.1', port: (server.address() as AddressInfo).port });
});
afterAll(async () => {
  await proxy.close();
  await agent.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
beforeEach(async () => {
  await proxy.set({ kind: 'none' });
  served = 0;
});

/** One POST through the proxy (bounded: 5 s): the status and body, or the network error's code / message. */
async function post(): Promise<
  { status: number; body: string; chunks: number; headers: Record<string, unknown> } | { error: string }
> {
  try {
    const res = await request(`${proxy.url}/v2/cancel`, {
      method: 'POST',
      body: '{"a":1}',
      headers: { 'content-type': 'application/json' },
      dispatcher: agent,
      headersTimeout: 5_000,
      bodyTimeout: 5_000,
    });
    let chunks = 0;
    let body = '';
    for await (const chunk of res.body) {
      chunks++;
      body += String(chunk);
    }
    return { status: res.statusCode, body, chunks, headers: res.headers };
  } catch (err) {
    const e = err as Error & { code?: string };
    return { error: `${e.code ?? ''} ${e.message}` };
  }
}

describe('the fault proxy', () => {
  it('passes a request and its answer through, one request per connection', async () => {
    const first = await post();
    const second = await post();
    expect(first).toMatchObject({ status: 200, body: ANSWER });
    expect(second).toMatchObject({ status: 200, body: ANSWER });
    expect((first as { headers: Record<string, unknown> }).headers.connection).toBe('close');
    expect(served).toBe(2);
  });

  it('holds the answer back for the latency asked', async () => {
    await proxy.set({ kind: 'latency', ms: 300 });
    const t0 = Date.now();
    expect(await post()).toMatchObject({ status: 200, body: ANSWER });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
  });

  it('trickles the answer a few bytes at a time', async () => {
    await proxy.set({ kind: 'trickle', bytes: 64, everyMs: 5 });
    const answer = await post();
    expect(answer).toMatchObject({ status: 200, body: ANSWER });
    // the body alone is over 200 bytes: at 64 bytes a write it arrives in several pieces
    expect((answer as { chunks: number }).chunks).toBeGreaterThan(2);
  });

  it('resets the connection in the middle of the body, after the server executed the request', async () => {
    await proxy.set({ kind: 'reset' });
    const answer = await post();
    expect(answer).toHaveProperty('error');
    expect(served).toBe(1);
  });

  it('answers a 502 with an HTML body after the server executed the request; a 503 without calling it', async () => {
    await proxy.set({ kind: 'http5xx', status: 502 });
    const bad = await post();
    expect(bad).toMatchObject({ status: 502 });
    expect((bad as { body: string }).body).toContain('<html>');
    expect(served).toBe(1);
    await proxy.set({ kind: 'http5xx', status: 503 });
    expect(await post()).toMatchObject({ status: 503 });
    expect(served).toBe(1);
  });

  it('never answers in a black hole, and never calls the server', async () => {
    await proxy.set({ kind: 'blackhole' });
    const answer = await post();
    expect((answer as { error: string }).error).toMatch(/timeout/i);
    expect(served).toBe(0);
  }, 15_000);

  it('refuses connections while down, and passes again once it is up', async () => {
    await proxy.set({ kind: 'down' });
    expect((await post()) as { error: string }).toMatchObject({ error: expect.stringMatching(/ECONNREFUSED/) });
    await proxy.set({ kind: 'none' });
    expect(await post()).toMatchObject({ status: 200, body: ANSWER });
    expect(proxy.applied.down).toBe(1);
  });

  it('hits only the share of connections it is given', async () => {
    let coin = 0;
    const halves = await FaultProxy.start(
      { host: '127.0.0.1', port: (server.address() as AddressInfo).port },
      { random: () => (coin++ % 2 === 0 ? 0.1 : 0.9) },
    );
    try {
      await halves.set({ kind: 'http5xx', status: 503 }, 0.5);
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await request(`${halves.url}/x`, { dispatcher: agent, headersTimeout: 5_000 });
        await res.body.text();
        statuses.push(res.statusCode);
      }
      expect(statuses).toEqual([503, 200, 503, 200]);
      expect(halves.applied).toMatchObject({ http5xx: 2, none: 2 });
    } finally {
      await halves.close();
    }
  });
});
