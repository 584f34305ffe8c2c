import type { Kysely } from 'kysely';
import type { Tables } from './migrations/index.js';

/**
 * `work` in a transaction: the caller's own when `db` is one already (a store called inside a unit of work:
 * Stores.transaction), a new one otherwise. Kysely does not nest transactions; a store that needs one asks here.
 */
export function transactionally<T>(db: Kysely<Tables>, work: (trx: Kysely<Tables>) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db) : db.transaction().execute(work);
}
