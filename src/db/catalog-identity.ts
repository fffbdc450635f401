import type { ClientBase } from 'pg';

/**
 * The id of this catalog, part of every ETag so that no tag of one catalog is ever answered 304
 * by another. Made by the migration; made anew here (as the tables' owner, at every start) when
 * the database is a copy: its oid or its cluster's system identifier is not the one recorded, as
 * after a restore or a CREATE DATABASE ... TEMPLATE. A replica shares both with its primary, and
 * so its id. Of instances starting at once on a copy, the first renews it and the others then
 * find it current, and all read the same id.
 */
export async function catalogIdentity(client: Pick<ClientBase, 'query'>): Promise<string> {
  await client.query(`
    UPDATE catalog_identity
       SET catalog_id = gen_random_uuid(), database_oid = here.database_oid, system_identifier = here.system_identifier
      FROM (SELECT (SELECT oid FROM pg_database WHERE datname = current_database())::bigint AS database_oid,
                   system_identifier
              FROM pg_control_system()) AS here
     WHERE (catalog_identity.database_oid, catalog_identity.system_identifier)
           IS DISTINCT FROM (here.database_oid, here.system_identifier)`);
  const { rows } = await client.query<{ catalog_id: string }>('SELECT catalog_id FROM catalog_identity');
  return rows[0].catalog_id;
}
