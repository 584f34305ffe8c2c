// What the metrics endpoint reads at scrape time: webhook deliveries still to be sent, by state. One grouped count
// over the status column; done and failed rows (nearly all of them) are never counted.
import type { Kysely } from 'kysely';
import type { Tables } from '../platform/db/db.js';

export async function countPendingDeliveries(db: Kysely<Tables>): Promise<Record<'ready' | 'doing', number>> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select(['status', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('status', 'in', ['ready', 'doing'])
    .groupBy('status')
    .execute();
  const counts = { ready: 0, doing: 0 };
  for (const row of rows) counts[row.status as 'ready' | 'doing'] = Number(row.n);
  return counts;
}
