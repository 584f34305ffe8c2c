// Postgres's LISTEN/NOTIFY between the processes of one deployment, so that work saved by one process (a webhook
// delivery saved by an API process) is started at once by another (the worker's dispatcher) instead of at its next
// poll. A notification is a hint, never the work itself: the rows are the truth, and a listener that lost its
// connection catches up at its next poll. Postgres only: npm start's embedded database serves one process, which
// wakes itself.
import pg from 'pg';

/** What a process of the deployment hears of the others through the database. */
export interface DatabaseNotifications {
  /**
   * Tells every listener of `channel` on this database (and schema). Sent outside a transaction, it goes at once; a
   * failure is the caller's to ignore (the listeners' polls find the work anyway).
   */
  notify(channel: string): Promise<void>;
  /**
   * Calls `onNotify` for each notification on `channel`, over a connection of its own, re-made after a loss (each
   * time after `retryMs`) until `close`.
   */
  listen(channel: string, onNotify: () => void, opts?: { readonly retryMs?: number }): Promise<{ close(): Promise<void> }>;
}

/** A channel of this database's schema: tests and deployments sharing one server by schemas do not wake each other. */
function scoped(channel: string, schema: string | undefined): string {
  if (!/^[a-z_]+$/.test(channel)) throw new Error(`invalid notification channel: ${channel}`);
  return schema === undefined ? channel : `${channel}.${schema}`;
}

export function createDatabaseNotifications(
  pool: pg.Pool,
  connection: pg.ClientConfig,
  schema: string | undefined,
): DatabaseNotifications {
  return {
    async notify(channel) {
      await pool.query('select pg_notify($1, null)', [scoped(channel, schema)]);
    },

    async listen(channel, onNotify, opts = {}) {
      const name = scoped(channel, schema);
      const retryMs = opts.retryMs ?? 1_000;
      let closed = false;
      let client: pg.Client | undefined;
      let retry: NodeJS.Timeout | undefined;

      const connect = async (): Promise<void> => {
        const next = new pg.Client(connection);
        // a lost connection is re-made; meanwhile the listener's own poll does the work
        next.on('error', () => undefined);
        next.on('end', () => {
          if (closed || client !== next) return;
          client = undefined;
          retry = setTimeout(reconnect, retryMs);
          retry.unref();
        });
        next.on('notification', (message) => {
          if (message.channel === name) onNotify();
        });
        await next.connect();
        if (closed) {
          await next.end().catch(() => undefined);
          return;
        }
        client = next;
        // the name is built from a checked channel and a checked schema name; quoted, as LISTEN takes an identifier
        await next.query(`listen "${name}"`);
        // work saved while no one listened is found by this round
        onNotify();
      };
      const reconnect = (): void => {
        connect().catch(() => {
          if (closed) return;
          retry = setTimeout(reconnect, retryMs);
          retry.unref();
        });
      };

      await connect();
      return {
        async close() {
          closed = true;
          clearTimeout(retry);
          const last = client;
          client = undefined;
          await last?.end().catch(() => undefined);
        },
      };
    },
  };
}
