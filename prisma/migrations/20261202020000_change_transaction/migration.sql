-- Each change's transaction, as an xid8, for the read cache's eviction (docs/reference/database.md#the-read-cache):
-- a poll evicts the bikes whose changes are visible in its snapshot and were not in the one
-- before (pg_visible_in_snapshot), looking only at ids from the previous snapshot's xmin up,
-- which this index serves (with the bike, so that it is an index-only scan). A column default, not
-- a trigger's assignment: whatever inserts the change's row, the inserting transaction's id is
-- recorded. Changes recorded before this migration have none (NULL): they are older than any
-- snapshot a poll compares, and no poll looks at them. Added without the default first, so
-- that the existing rows are not rewritten.
ALTER TABLE "bike_changes" ADD COLUMN "change_xact" xid8;
ALTER TABLE "bike_changes" ALTER COLUMN "change_xact" SET DEFAULT pg_current_xact_id();
CREATE INDEX "bike_changes_change_xact_bike_id_idx" ON "bike_changes" ("change_xact", "bike_id");
