-- The history outlives the feed (docs/decisions.md#the-change-feed). bike_changes is both: the feed
-- a follower reads, whose retention (retention_days, CHANGES_RETENTION_DAYS) says how far back a
-- cursor may go on, and the history reports read (docs/reporting.md), which a shop may want for
-- longer. So they are two positions: the horizon, past which a cursor is 410, moves as before;
-- what it passes is kept until it is older than history_retention_days (HISTORY_RETENTION_DAYS,
-- set by the role that migrates; NULL: for ever), then pruned as before, up to the history's own
-- position. With both retentions equal, the log is pruned as it was.
ALTER TABLE "bike_changes_pruning"
    ADD COLUMN "history_retention_days" INTEGER,
    ADD COLUMN "history_txid" BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN "history_change_id" BIGINT NOT NULL DEFAULT 0,
    ADD CONSTRAINT "bike_changes_pruning_history_retention_days" CHECK ("history_retention_days" >= 1);

-- What the horizon has passed was pruned already.
UPDATE "bike_changes_pruning" SET ("history_txid", "history_change_id") = ("horizon_txid", "horizon_change_id");

-- On the path the function is made with, as in functions_ignore_temporary_tables.
SELECT set_config('search_path', current_setting('search_path') || ', pg_temp', true);

-- As before (prune_within_retention): the horizon moves past the changes older than the feed's
-- retention and settled; then, up to the horizon, each change older than the history's retention
-- supersedes the earlier changes of its bike, which go, and a delete goes too. `looked_at` is the
-- larger of the two steps' (a full batch: call again), `deleted` what went.
CREATE OR REPLACE FUNCTION "prune_bike_changes"("older_than" TIMESTAMPTZ, "max_rows" INTEGER,
    OUT "looked_at" INTEGER, OUT "deleted" INTEGER)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
  "cut_off" TIMESTAMPTZ;
  "history_cut_off" TIMESTAMPTZ;
  "pruned" INTEGER;
BEGIN
  SELECT least("older_than", now() - make_interval(days => "retention_days")),
         CASE WHEN "history_retention_days" IS NOT NULL
              THEN least("older_than", now() - make_interval(days => "history_retention_days")) END
    INTO "cut_off", "history_cut_off"
    FROM "bike_changes_pruning" FOR UPDATE;
  WITH next AS (
    SELECT c."txid", c."change_id",
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
  ), moved AS (
    UPDATE "bike_changes_pruning" SET ("horizon_txid", "horizon_change_id") = (l."txid", l."change_id")
      FROM (SELECT "txid", "change_id" FROM seen ORDER BY "txid" DESC, "change_id" DESC LIMIT 1) l
    RETURNING 1
  )
  SELECT count(*) FROM seen INTO "looked_at";
  "deleted" := 0;
  IF "history_cut_off" IS NULL THEN
    RETURN;
  END IF;
  WITH next AS (
    SELECT c."change_id", c."txid", c."kind", c."bike_id", c."changed_at" < "history_cut_off" AS "settled"
      FROM "bike_changes" c, "bike_changes_pruning" p
     WHERE (c."txid", c."change_id") > (p."history_txid", p."history_change_id")
       AND (c."txid", c."change_id") <= (p."horizon_txid", p."horizon_change_id")
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
    UPDATE "bike_changes_pruning" SET ("history_txid", "history_change_id") = (l."txid", l."change_id")
      FROM (SELECT "txid", "change_id" FROM seen ORDER BY "txid" DESC, "change_id" DESC LIMIT 1) l
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM seen), (SELECT count(*) FROM gone) INTO "pruned", "deleted";
  "looked_at" := greatest("looked_at", "pruned");
END
$$;
