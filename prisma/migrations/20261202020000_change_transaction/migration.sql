-- The read cache's poll (docs/reference/database.md#the-read-cache): the bikes whose changes are
-- visible in its snapshot and were not in the one before (pg_visible_in_snapshot of each change's
-- writer_txid, the inserting transaction), looking only at transactions from the previous
-- snapshot's xmin up, which this index serves (with the bike, so that it is an index-only scan).
CREATE INDEX "bike_changes_writer_txid_bike_id_idx" ON "bike_changes" ("writer_txid", "bike_id");
