-- The change log's retention belongs to the operator (docs/decisions.md#the-change-feed), not to
-- whoever calls prune_bike_changes: the service's role, which calls it every minute, could
-- otherwise pass any cut-off and erase history the retention keeps. The retention is kept here,
-- written by the role that migrates (CHANGES_RETENTION_DAYS, at every start that migrates and at
-- `npm run db:migrate`); the service's role may only read it. A cut-off newer than the retention
-- allows is moved back to it: a caller may keep more history than the retention, never less.
ALTER TABLE "bike_changes_pruning"
    ADD COLUMN "retention_days" INTEGER NOT NULL DEFAULT 30,
    ADD CONSTRAINT "bike_changes_pruning_retention_days" CHECK ("retention_days" >= 1);

-- As before (the migration change_feed), with its cut-off no newer than the retention.
CREATE OR REPLACE FUNCTION "prune_bike_changes"("older_than" TIMESTAMPTZ, "max_rows" INTEGER,
    OUT "looked_at" INTEGER, OUT "deleted" INTEGER)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
  "cut_off" TIMESTAMPTZ;
BEGIN
  SELECT least("older_than", now() - make_interval(days => "retention_days")) INTO "cut_off"
    FROM "bike_changes_pruning" FOR UPDATE;
  WITH next AS (
    SELECT c."change_id", c."txid", c."kind", c."bike_id",
           c."changed_at" < "cut_off" AND c."txid" < pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS "settled"
      FROM "bike_changes" c, "bike_changes_pruning" p
     WHERE (c."txid", c."change_id") > (p."horizon_txid", p."horizon_change_id")
     ORDER BY c."txid", c."change_id"
     LIMIT "max_rows"
  ), first_unsettled AS (
    SELECT "txid", "change_id" FROM next WHERE NOT "settled" ORDER BY "txid", "change_id" LIMIT 1
  ), seen AS (
    SELECT n.* FROM next n
     WHERE NOT EXISTS (SELECT FROM first_unsettled u WHERE (n."txid", n."change_id") >= (u."txid", u."change_id"))
  ), gone AS (
    DELETE FROM "bike_changes" c USING seen l
     WHERE c."bike_id" = l."bike_id"
       AND ((c."txid", c."change_id") < (l."txid", l."change_id") OR (c."change_id" = l."change_id" AND l."kind" = 'delete'))
    RETURNING c."change_id"
  ), moved AS (
    UPDATE "bike_changes_pruning" SET ("horizon_txid", "horizon_change_id") = (l."txid", l."change_id")
      FROM (SELECT "txid", "change_id" FROM seen ORDER BY "txid" DESC, "change_id" DESC LIMIT 1) l
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM seen), (SELECT count(*) FROM gone) INTO "looked_at", "deleted";
END
$$;
