/**
 * The no-orchestration baseline of `npm run bench:flows`: the same kinds of work as paygate's flows, on plain
 * Fastify with no Temporal, no idempotency layer and no sealing — a Basic-auth lookup of the project (a keyed hash
 * of the secret compared in constant time), one PGlite write per step and one loopback HTTP call to a stub PG per
 * step (the stub PG runs in this process and answers at once). It is what a merchant's own minimal server would
 * cost; paygate's ratio to it is the price of its guarantees.
 *
 * Run by bench/flows.ts as its own process: `tsx bench/flows-baseline.ts <dataDir>`; prints `listening <port>`.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { request } from 'undici';

const dataDir = process.argv[2];
if (!dataDir) throw new Error('usage: flows-baseline.ts <dataDir>');

const db = await PGlite.create(dataDir);
await db.exec(`
  create table if not exists projects (client_key text primary key, secret_hash bytea not null);
  create table if not exists receipts (id text primary key, client_key text not null, order_id text, price int,
    status int not null, tid text, cancelled int not null default 0, created_at timestamptz not null default now());
  create table if not exists verifications (id text primary key, client_key text not null, tid text, phone text,
    status int not null, realarms int not null default 0, created_at timestamptz not null default now());
  create table if not exists deliveries (id text primary key, client_key text not null, status text not null,
    created_at timestamptz not null default now());
`);
const hash = (secret: string) => createHash('sha256').update(secret).digest();
await db.query('insert into projects (client_key, secret_hash) values ($1, $2) on conflict (client_key) do nothing', [
  'baseline-client',
  hash('baseline-secret'),
]);

// The stub PG and the webhook receiver: loopback, answering at once.
const stub = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ tid: randomUUID(), otp: '123456', ok: true }));
  });
});
await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
const stubUrl = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;

async function callPg(path: string, body: unknown): Promise<{ tid: string; otp: string }> {
  const res = await request(`${stubUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return (await res.body.json()) as { tid: string; otp: string };
}

async function authenticate(req: FastifyRequest, reply: FastifyReply): Promise<string | undefined> {
  const header = req.headers.authorization ?? '';
  const [clientKey, secret] = Buffer.from(header.replace(/^Basic /, ''), 'base64')
    .toString()
    .split(':');
  const row = await db.query<{ secret_hash: Uint8Array }>('select secret_hash from projects where client_key = $1', [clientKey]);
  const stored = row.rows[0]?.secret_hash;
  if (!stored || !timingSafeEqual(Buffer.from(stored), hash(secret ?? ''))) {
    await reply.code(401).send({ error_code: 'UNAUTHORIZED' });
    return undefined;
  }
  return clientKey;
}

const app = Fastify({ logger: false });
app.get('/health', async () => ({ status: 'ok' }));

app.post<{ Body: { order_id: string; price: number } }>('/charge', async (req, reply) => {
  const key = await authenticate(req, reply);
  if (!key) return;
  const id = randomUUID();
  await db.query('insert into receipts (id, client_key, order_id, price, status) values ($1, $2, $3, $4, 0)', [
    id,
    key,
    req.body.order_id,
    req.body.price,
  ]);
  const { tid } = await callPg('/charge', req.body);
  await db.query('update receipts set status = 1, tid = $2 where id = $1', [id, tid]);
  return { receipt_id: id, status: 1, tid };
});

app.get<{ Params: { id: string } }>('/receipt/:id', async (req, reply) => {
  const key = await authenticate(req, reply);
  if (!key) return;
  const row = await db.query('select * from receipts where id = $1 and client_key = $2', [req.params.id, key]);
  return row.rows[0] ?? reply.code(404).send({ error_code: 'NOT_FOUND' });
});

app.post<{ Body: { receipt_id: string; cancel_price: number } }>('/cancel', async (req, reply) => {
  const key = await authenticate(req, reply);
  if (!key) return;
  await callPg('/cancel', req.body);
  await db.query('update receipts set cancelled = cancelled + $2 where id = $1', [req.body.receipt_id, req.body.cancel_price]);
  return { receipt_id: req.body.receipt_id, cancelled_price: req.body.cancel_price };
});

app.post<{ Body: { phone: string } }>('/auth/request', async (req, reply) => {
  const key = await authenticate(req, reply);
  if (!key) return;
  const id = randomUUID();
  await db.query('insert into verifications (id, client_key, phone, status) values ($1, $2, $3, 50)', [id, key, req.body.phone]);
  const { tid } = await callPg('/otp', req.body);
  await db.query('update verifications set status = 51, tid = $2 where id = $1', [id, tid]);
  return { receipt_id: id, status: 51 };
});

app.post<{ Body: { receipt_id: string } }>('/auth/realarm', async (req, reply) => {
  const key = await authenticate(req, reply);
  if (!key) return;
  await callPg('/otp/resend', req.body);
  await db.query('update verifications set realarms = realarms + 1 where id = $1', [req.body.receipt_id]);
  return { receipt_id: req.body.receipt_id, status: 51 };
});

app.get<{ Querystring: { phone: string } }>('/sms', async (req, reply) => {
  const key = await authenticate(req, reply);
  if (!key) return;
  const { otp } = await callPg('/inbox', req.query);
  return { list: [{ otp }] };
});

app.post<{ Body: { receipt_id: string; otp: string } }>('/auth/confirm', async (req, reply) => {
  const key = await authenticate(req, reply);
  if (!key) return;
  await callPg('/otp/confirm', req.body);
  await db.query('update verifications set status = 12 where id = $1', [req.body.receipt_id]);
  return { receipt_id: req.body.receipt_id, status: 12 };
});

app.get<{ Params: { id: string } }>('/auth/:id', async (req, reply) => {
  const key = await authenticate(req, reply);
  if (!key) return;
  const row = await db.query('select * from verifications where id = $1 and client_key = $2', [req.params.id, key]);
  return row.rows[0] ?? reply.code(404).send({ error_code: 'NOT_FOUND' });
});

app.put<{ Params: { id: string } }>('/ship/:id', async (req, reply) => {
  const key = await authenticate(req, reply);
  if (!key) return;
  await callPg('/ship', req.body);
  await db.query('update receipts set status = 3 where id = $1', [req.params.id]);
  return { receipt_id: req.params.id, escrow_data: { status: 3 } };
});

app.post<{ Body: { url: string } }>('/webhook', async (req, reply) => {
  const key = await authenticate(req, reply);
  if (!key) return;
  const id = randomUUID();
  await db.query(`insert into deliveries (id, client_key, status) values ($1, $2, 'doing')`, [id, key]);
  const res = await request(req.body.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'webhook-id': id },
    body: JSON.stringify({ event_code: 301, delivery_id: id }),
  });
  await res.body.dump();
  await db.query(`update deliveries set status = 'done' where id = $1`, [id]);
  return { delivery_id: id };
});

await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`listening ${(app.server.address() as AddressInfo).port}\n`);
