-- The functions that keep the catalog's bookkeeping and its change log run with their owner's
-- rights (docs/decisions.md#the-services-role) and name their tables and sequences unqualified,
-- found on the search_path fixed when they were made. Unless that path names pg_temp, PostgreSQL
-- searches a session's temporary schema first: any role that may make temporary tables (every
-- role, by default: the database's TEMP right) could make its own "bike_changes",
-- "catalog_version_slots" or "bikes_version_seq", and its writes would be logged and counted there
-- alone, out of the feed, the history and the ETags. With pg_temp last on their path, they are
-- always the schema's.
SELECT set_config('search_path', current_setting('search_path') || ', pg_temp', true);

ALTER FUNCTION "bump_catalog_version"() SET search_path FROM CURRENT;
ALTER FUNCTION "next_bike_version"() SET search_path FROM CURRENT;
ALTER FUNCTION "bike_change_position"(UUID, BIGINT) SET search_path FROM CURRENT;
ALTER FUNCTION "bike_change_writer"() SET search_path FROM CURRENT;
ALTER FUNCTION "capture_bike_inserts"() SET search_path FROM CURRENT;
ALTER FUNCTION "capture_bike_updates"() SET search_path FROM CURRENT;
ALTER FUNCTION "capture_bike_deletes"() SET search_path FROM CURRENT;
ALTER FUNCTION "capture_bike_truncate"() SET search_path FROM CURRENT;
ALTER FUNCTION "prune_bike_changes"(TIMESTAMPTZ, INTEGER) SET search_path FROM CURRENT;
