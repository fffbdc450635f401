-- The catalog's version as every list reads it (src/bikes/catalog-version.ts,
-- docs/reference/caching-and-conditions.md#conditional-get), and the state of the log the change feed
-- reads with its changes, in one function. A list's statement, a search's above all, is sent
-- unnamed (its LIKE's plan must see its pattern: docs/reference/database.md#prepared-statements), so
-- PostgreSQL planned the version's three subqueries with it, every time; PL/pgSQL keeps the plan of
-- its query for the session. STABLE: it reads in the calling statement's snapshot, so the version,
-- the snapshot it names and the list's rows are of one moment.
SELECT set_config('search_path', current_setting('search_path') || ', pg_temp', true);

CREATE FUNCTION "catalog_list_version"()
RETURNS TABLE (
  -- The sum of the version slots, which every committed change to bikes bumps.
  "version" TEXT,
  -- The newest transaction that bumped one: a restore rewrites them all.
  "touched" TEXT,
  -- The triggers that keep the version and the change log, each with whether it is on and the
  -- transaction that last changed it (switching one off and on again changes this).
  "triggers" TEXT,
  -- Every one of them fires whoever writes (ENABLE ALWAYS): no change escapes them.
  "counting" BOOLEAN,
  -- What the calling statement sees, which the change feed goes on from.
  "snapshot" TEXT,
  -- How far pruning of the change log has gone (its one row, which the migration change_feed made).
  "horizon_txid" TEXT,
  "horizon_change_id" TEXT
) LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
BEGIN
  RETURN QUERY
  SELECT slots.version, slots.touched, catalog_triggers.triggers, catalog_triggers.counting,
    pg_current_snapshot()::text, pruning.horizon_txid::text, pruning.horizon_change_id::text
  FROM
    (SELECT sum(s.version)::text AS version, max(s.xmin::text::bigint)::text AS touched
      FROM "catalog_version_slots" s) AS slots
    CROSS JOIN
    (SELECT string_agg(t.tgname || ':' || t.tgenabled::text || ':' || t.xmin::text, ',' ORDER BY t.tgname) AS triggers,
        bool_and(t.tgenabled = 'A') AS counting
      FROM pg_trigger t WHERE t.tgrelid = '"bikes"'::regclass AND t.tgname LIKE 'bikes\_%') AS catalog_triggers
    -- Joined, so that the row missing leaves the horizon null instead of the version out.
    LEFT JOIN "bike_changes_pruning" pruning ON true;
END
$$;
