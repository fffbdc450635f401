import { createHash } from 'node:crypto';
import type { Query } from './pool';

/**
 * The identity of this catalog's history, part of every ETag and cursor, so that none given out
 * in one history is ever honoured in another (docs/reference/caching-and-conditions.md#catalog-identity). It is made of
 * what no copy, restore or failover carries over: the random id the migrations made
 * (catalog_identity), the cluster's system identifier (another cluster: a restore elsewhere),
 * its timeline (a point-in-time recovery or a promoted replica, whose later transactions may
 * reuse the ids of lost ones), and the database's oid (a database dropped and made again, or
 * made from a template). Read at start and every second after, on the primary; a replica shares
 * all four with its primary. Within one history, rows carry the transaction that wrote them
 * (xmin), which a restore in place rewrites: that part is read with every row (repository.ts).
 */
const IDENTITY = `
  SELECT catalog.catalog_id::text AS catalog,
         control.system_identifier::text AS system,
         substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) AS timeline,
         database.oid::text AS database
    FROM catalog_identity AS catalog, pg_control_system() AS control, pg_database AS database
   WHERE database.datname = current_database()`;

const REFRESH_EVERY_MS = 1_000;

export interface CatalogIdentity {
  /** The identity as last read. */
  current(): string;
  stop(): void;
}

async function readIdentity(query: Query): Promise<string> {
  const { rows } = await query<{ catalog: string; system: string; timeline: string; database: string }>(IDENTITY, []);
  const [{ catalog, system, timeline, database }] = rows;
  return createHash('sha256').update(`${catalog}/${system}/${timeline}/${database}`).digest('base64url').slice(0, 16);
}

/**
 * Reads the identity, then again every second; `onChange` hears of a new one. A read that fails
 * (the primary away) keeps the last one.
 */
export async function watchCatalogIdentity(
  query: Query,
  onChange: (identity: string) => void,
): Promise<CatalogIdentity> {
  let identity = await readIdentity(query);
  const timer = setInterval(() => {
    readIdentity(query).then(
      (read) => {
        if (read === identity) return;
        identity = read;
        onChange(read);
      },
      () => undefined,
    );
  }, REFRESH_EVERY_MS);
  timer.unref();
  return { current: () => identity, stop: () => clearInterval(timer) };
}
