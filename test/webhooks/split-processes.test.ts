// A split deployment (API processes and worker processes on one Postgres): a delivery saved by an API process, where
// no dispatcher runs, is sent at once by the worker's, told through Postgres's LISTEN/NOTIFY, not at the worker's next
// poll; a listening connection the server ends is made again. Two pools on one schema stand for the two processes.
// Postgres only: npm start's embedded database serves one process, whose dispatcher is woken in the process.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServices, type Services } from '../../src/composition/services.js';
import { createStores } from '../../src/composition/stores.js';
import { dropSchema, openDatabase, type Database } from '../../src/platform/db/db.js';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { createDeliveryDispatcher, DELIVERY_DUE_CHANNEL, type DeliveryDispatcher } from '../../src/webhooks/dispatcher.js';
import { eventually, type Receiver, startReceiver } from './fixtures.js';

const databaseUrl = process.env.DATABASE_URL;
/** The worker's poll, far beyond what the test waits: only a notification can make it send in time. */
const WORKER_POLL_MS = 10 * 60_000;
/** What "at once" allows on a shared machine. */
const AT_ONCE_MS = 5_000;

describe.skipIf(!databaseUrl)('a delivery saved by a process that runs no dispatcher', () => {
  const schema = `t_${randomBytes(8).toString('hex')}`;
  const keyring = createKeyring(parseKeyringSpec(generateKeyringSpec('split')));
  const now = () => new Date();
  let apiDatabase: Database;
  let workerDatabase: Database;
  let api: Services;
  let dispatcher: DeliveryDispatcher;
  let receiver: Receiver;
  let admin: pg.Client;

  beforeAll(async () => {
    apiDatabase = await openDatabase({ databaseUrl: databaseUrl!, schema });
    workerDatabase = await openDatabase({ databaseUrl: databaseUrl!, schema });
    admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    // the API process: its services' dispatcher is never started there
    api = createServices({
      stores: createStores(apiDatabase.db, keyring),
      gateways: { get: () => undefined, names: [] },
      wallClock: now,
      businessClock: now,
      sandbox: true,
      databaseNotifications: apiDatabase.notifications!,
    });
    // the worker process's dispatcher, which polls far too rarely to matter here
    dispatcher = createDeliveryDispatcher({
      store: createStores(workerDatabase.db, keyring).webhooks,
      attempts: { sandbox: true, clock: now },
      businessClock: now,
      pollMs: WORKER_POLL_MS,
      notifications: workerDatabase.notifications!,
    });
    dispatcher.start();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await receiver?.close();
    await admin?.end();
    await apiDatabase?.close();
    await workerDatabase?.close();
    if (databaseUrl) await dropSchema(databaseUrl, schema);
  });

  /** The API saves a test delivery; how long until the receiver has it. */
  async function deliveredAfterMs(): Promise<number> {
    const { project } = await api.projects.create({ name: `split ${randomBytes(3).toString('hex')}` });
    await api.webhooks.save(project, { url: receiver.url });
    const saved = Date.now();
    const { deliveryId } = await api.webhooks.sendTest(project);
    await eventually(
      async () => receiver.requests.find((r) => r.headers['webhook-id'] === deliveryId),
      `delivery ${deliveryId} at the receiver`,
      AT_ONCE_MS * 4,
    );
    return Date.now() - saved;
  }

  /** The backend of the worker's listening connection, as the server shows it. */
  async function listenerPid(): Promise<number | undefined> {
    const { rows } = await admin.query<{ pid: number }>('select pid from pg_stat_activity where query = $1', [
      `listen "${DELIVERY_DUE_CHANNEL}.${schema}"`,
    ]);
    return rows[0]?.pid;
  }

  it("is sent by the worker's dispatcher at once, told through the database, not at its poll", async () => {
    // the dispatcher's first rounds (at start, and once it listens) are over
    await eventually(listenerPid, 'the worker listening');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await deliveredAfterMs()).toBeLessThan(AT_ONCE_MS);
    expect(await deliveredAfterMs()).toBeLessThan(AT_ONCE_MS);
  });

  it('a listening connection the server ends is made again, and the next delivery is sent at once', async () => {
    const first = await eventually(listenerPid, 'the worker listening');
    await admin.query('select pg_terminate_backend($1)', [first]);
    const second = await eventually(async () => {
      const pid = await listenerPid();
      return pid !== undefined && pid !== first ? pid : undefined;
    }, 'the worker listening again');
    expect(second).not.toBe(first);
    expect(await deliveredAfterMs()).toBeLessThan(AT_ONCE_MS);
  });
});
