// PGlite served over the Postgres wire protocol on a unix socket, so the embedded database runs in a process of
// its own and paygate reaches it with node-postgres, as it reaches a Postgres server.
//
// PGlite is one Postgres session. Connections share it by turns: a connection that gets the session keeps it until
// the session's ReadyForQuery says idle ('I'), that is through a whole transaction and a whole extended-protocol
// exchange (Parse ... Sync), and the next waiting connection gets it then; the messages of the others wait in their
// buffers meanwhile. A connection that closes while it holds the session has its exchange ended and its transaction
// rolled back before anyone else runs. (@electric-sql/pglite-socket keeps a connection's turn only while a
// transaction is open, so two connections' extended-protocol messages can interleave; it also has no release for
// this PGlite version.) paygate keeps one connection (db.ts: PGLITE_PROCESS_POOL_SIZE); more are served correctly.
//
// A client that waits inside its transaction for a statement on another connection would wait for ever, as it
// would on a pool of one connection; paygate's stores run a transaction's statements on the transaction.
import { createServer, type Server, type Socket } from 'node:net';
import type { PGlite } from '@electric-sql/pglite';

const SSL_REQUEST_CODE = 80877103;
const GSSENC_REQUEST_CODE = 80877104;
const CANCEL_REQUEST_CODE = 80877102;
const TERMINATE = 0x58; // 'X'
const READY_FOR_QUERY = 0x5a; // 'Z'
const IDLE = 0x49; // 'I'
/** Sync: ends an extended-protocol exchange a client left open */
const SYNC_MESSAGE = new Uint8Array([0x53, 0, 0, 0, 4]);

class Connection {
  /** bytes received and not yet cut into messages */
  #pending: Buffer = Buffer.alloc(0);
  /** complete messages waiting for the session, in order */
  readonly messages: Buffer[] = [];
  started = false;
  closed = false;
  queued = false;

  constructor(readonly socket: Socket) {}

  /**
   * Cuts the received bytes into messages. Before the startup message, SSL and GSSAPI requests are refused
   * here (one byte 'N'; the client goes on in plain text on the private socket) and a cancel request is dropped
   * (PGlite has no other backend to signal).
   */
  receive(chunk: Buffer): void {
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    for (;;) {
      if (!this.started) {
        if (this.#pending.length < 8) return;
        const length = this.#pending.readInt32BE(0);
        if (length < 8 || length > 10_000) {
          this.fail();
          return;
        }
        if (this.#pending.length < length) return;
        const code = this.#pending.readInt32BE(4);
        const message = this.#pending.subarray(0, length);
        this.#pending = this.#pending.subarray(length);
        if (code === SSL_REQUEST_CODE || code === GSSENC_REQUEST_CODE) {
          this.socket.write('N');
          continue;
        }
        if (code === CANCEL_REQUEST_CODE) {
          this.fail();
          return;
        }
        this.started = true;
        this.messages.push(message);
        continue;
      }
      if (this.#pending.length < 5) return;
      const length = this.#pending.readInt32BE(1);
      if (length < 4) {
        this.fail();
        return;
      }
      if (this.#pending.length < length + 1) return;
      const message = this.#pending.subarray(0, length + 1);
      this.#pending = this.#pending.subarray(length + 1);
      if (message[0] === TERMINATE) {
        this.socket.end();
        return;
      }
      this.messages.push(message);
    }
  }

  fail(): void {
    this.socket.destroy();
  }
}

/** The transaction status of the last ReadyForQuery in a response, or undefined when it has none. */
function lastReadyStatus(response: Uint8Array): number | undefined {
  let status: number | undefined;
  const view = new DataView(response.buffer, response.byteOffset, response.byteLength);
  for (let offset = 0; offset + 5 <= response.length; ) {
    const length = view.getInt32(offset + 1);
    if (response[offset] === READY_FOR_QUERY && length === 5 && offset + 5 < response.length) status = response[offset + 5];
    offset += 1 + length;
  }
  return status;
}

export interface PGliteWireServer {
  /** connections open now */
  readonly connections: number;
  /**
   * Ends every connection (their transactions rolled back) and refuses new ones, once the session is free. The
   * socket still answers meanwhile, so nobody takes the cluster for free while PGlite closes (pglite-process.ts).
   */
  drain(): Promise<void>;
  /** stops listening: the socket goes */
  close(): Promise<void>;
}

/** Serves `pglite` on the unix socket `socketPath` (its directory must be private: nothing is authenticated). */
export async function servePGlite(pglite: PGlite, socketPath: string): Promise<PGliteWireServer> {
  await pglite.waitReady;
  const connections = new Set<Connection>();
  /** the connection that holds the session (mid transaction or mid exchange), if any */
  let owner: Connection | undefined;
  /** connections with messages, waiting for the session */
  const waiting: Connection[] = [];
  let running: Promise<void> | undefined;

  const enqueue = (connection: Connection) => {
    if (connection !== owner && !connection.queued && connection.messages.length > 0) {
      connection.queued = true;
      waiting.push(connection);
    }
  };

  const run = async (connection: Connection, batch: Uint8Array): Promise<Uint8Array> => {
    try {
      return await pglite.execProtocolRaw(batch);
    } catch (err) {
      // PGlite answers SQL errors in the protocol; a throw means the session itself broke: nothing can go on
      connection.fail();
      throw err;
    }
  };

  /** Ends what a closed connection left open on the session: its exchange, its transaction. */
  const release = async (connection: Connection) => {
    connection.messages.length = 0;
    await pglite.execProtocolRaw(SYNC_MESSAGE);
    if (pglite.isInTransaction()) await pglite.exec('rollback');
  };

  const pump = async () => {
    for (;;) {
      let connection = owner;
      if (connection?.closed) {
        await release(connection);
        owner = undefined;
        continue;
      }
      if (!connection) {
        connection = waiting.shift();
        if (!connection) return;
        connection.queued = false;
        if (connection.closed) continue;
      }
      if (connection.messages.length === 0) return; // the owner's next message has not arrived yet
      // the startup message is answered on its own; every other message the client sent so far goes in one batch
      // (a startup message begins with its length's high byte, 0; no other message does)
      const batch =
        connection.messages[0]![0] === 0 ? connection.messages.shift()! : Buffer.concat(connection.messages.splice(0));
      const response = await run(connection, batch);
      if (!connection.closed && response.length > 0) connection.socket.write(Buffer.from(response));
      owner = lastReadyStatus(response) === IDLE ? undefined : connection;
      enqueue(connection);
    }
  };

  const schedule = () => {
    if (running) return;
    running = pump()
      .catch((err: unknown) => {
        // the session is broken: every client learns it at once rather than waiting
        for (const connection of connections) connection.fail();
        server.emit('error', err);
      })
      .finally(() => {
        running = undefined;
        // work that arrived while the pump was finishing (never a loop: the owner waits for its own next message)
        if (owner ? owner.closed || owner.messages.length > 0 : waiting.length > 0) schedule();
      });
  };

  let draining = false;
  const server: Server = createServer((socket) => {
    if (draining) {
      socket.destroy();
      return;
    }
    const connection = new Connection(socket);
    connections.add(connection);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      connection.receive(chunk);
      enqueue(connection);
      schedule();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      connection.closed = true;
      connections.delete(connection);
      if (owner === connection) schedule();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });

  return {
    get connections() {
      return connections.size;
    },
    async drain() {
      draining = true;
      const ended = [...connections].map(
        (connection) => new Promise<void>((resolve) => connection.socket.once('close', () => resolve())),
      );
      for (const connection of connections) connection.socket.destroy();
      await Promise.all(ended);
      // the last owner's release runs in the pump, scheduled by its 'close'
      while (running) await running;
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
