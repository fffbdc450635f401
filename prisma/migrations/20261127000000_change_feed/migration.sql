-- The change log (docs/decisions.md#the-change-feed): every change to "bikes", as the bike is after
-- it (a delete: its id), written by triggers in the changing transaction, whoever writes. The feed
-- reads it in the order of "txid" and "change_id"; reporting SQL reads it as history.
--
-- "txid" is the writer's transaction id (pg_current_xact_id), or, when a transaction with a
-- smaller id changes a bike after a later one's committed change to it (a long transaction waiting
-- for the row, then writing on top), that later one's: a bike's changes keep the order they were
-- committed in. A reader emits only changes whose "txid" is below the oldest transaction still
-- running (pg_snapshot_xmin), so no change can later appear before one it has emitted.

-- CreateTable
CREATE TABLE "bike_changes" (
    "change_id" BIGSERIAL NOT NULL,
    "txid" BIGINT NOT NULL,
    "writer_txid" BIGINT NOT NULL,
    "changed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "kind" TEXT NOT NULL,
    "bike_id" UUID NOT NULL,
    "handle" TEXT,
    "title" TEXT,
    "product_type" TEXT,
    "created_at" TEXT,
    "description" TEXT,
    "vendor" TEXT,
    "available_for_sale" BOOLEAN,
    "total_inventory" DOUBLE PRECISION,
    "min_price_amount" DOUBLE PRECISION,
    "min_price_currency_code" TEXT,
    "max_price_amount" DOUBLE PRECISION,
    "max_price_currency_code" TEXT,

    CONSTRAINT "bike_changes_pkey" PRIMARY KEY ("change_id"),
    CONSTRAINT "bike_changes_kind" CHECK ("kind" IN ('create', 'update', 'delete'))
);

-- CreateIndex
CREATE INDEX "bike_changes_txid_change_id_idx" ON "bike_changes"("txid", "change_id");
CREATE INDEX "bike_changes_bike_id_txid_change_id_idx" ON "bike_changes"("bike_id", "txid", "change_id");
CREATE INDEX "bike_changes_changed_at_idx" ON "bike_changes"("changed_at");

-- Where pruning stands: it has looked at every change up to this position. Before it the log keeps
-- only the latest change of each bike there is; after it, every change. A cursor made before the
-- horizon passed it cannot be followed (a delete it needed may be gone: 410, relist).
CREATE TABLE "bike_changes_pruning" (
    "id" BOOLEAN NOT NULL DEFAULT true,
    "horizon_txid" BIGINT NOT NULL DEFAULT 0,
    "horizon_change_id" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "bike_changes_pruning_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "bike_changes_pruning_one_row" CHECK ("id")
);
INSERT INTO "bike_changes_pruning" ("id") VALUES (true);

-- The bikes there are now, each as a first change, so that the feed from its start rebuilds the
-- catalog made before it.
INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id", "handle", "title", "product_type",
    "created_at", "description", "vendor", "available_for_sale", "total_inventory", "min_price_amount",
    "min_price_currency_code", "max_price_amount", "max_price_currency_code")
SELECT pg_current_xact_id()::text::bigint, pg_current_xact_id()::text::bigint, 'create', "id", "handle", "title",
    "product_type", "created_at", "description", "vendor", "available_for_sale", "total_inventory", "min_price_amount",
    "min_price_currency_code", "max_price_amount", "max_price_currency_code"
FROM "bikes" ORDER BY "seq";

-- The position of a change to a bike: the writer's transaction id, or the newest position of a
-- change to that bike already there (committed before this transaction could lock the row), if
-- larger.
CREATE FUNCTION "bike_change_position"("bike" UUID, "writer" BIGINT) RETURNS BIGINT LANGUAGE sql STABLE
SET search_path FROM CURRENT AS $$
  SELECT greatest("writer", coalesce((SELECT max("txid") FROM "bike_changes" WHERE "bike_id" = "bike"), 0))
$$;

-- Statement-level, with transition tables, run with their owner's rights (the service's role only
-- reads the log): one function for each kind of statement. An UPDATE that changed a bike's id is
-- the old id's delete and the new one's create.
CREATE FUNCTION "capture_bike_inserts"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  writer BIGINT := pg_current_xact_id()::text::bigint;
BEGIN
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id", "handle", "title", "product_type",
      "created_at", "description", "vendor", "available_for_sale", "total_inventory", "min_price_amount",
      "min_price_currency_code", "max_price_amount", "max_price_currency_code")
  SELECT "bike_change_position"(n."id", writer), writer, 'create', n."id", n."handle", n."title", n."product_type",
      n."created_at", n."description", n."vendor", n."available_for_sale", n."total_inventory", n."min_price_amount",
      n."min_price_currency_code", n."max_price_amount", n."max_price_currency_code"
  FROM new_rows n;
  RETURN NULL;
END
$$;

CREATE FUNCTION "capture_bike_updates"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  writer BIGINT := pg_current_xact_id()::text::bigint;
BEGIN
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id")
  SELECT "bike_change_position"(o."id", writer), writer, 'delete', o."id"
  FROM old_rows o WHERE NOT EXISTS (SELECT FROM new_rows n WHERE n."id" = o."id");
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id", "handle", "title", "product_type",
      "created_at", "description", "vendor", "available_for_sale", "total_inventory", "min_price_amount",
      "min_price_currency_code", "max_price_amount", "max_price_currency_code")
  SELECT "bike_change_position"(n."id", writer), writer,
      CASE WHEN EXISTS (SELECT FROM old_rows o WHERE o."id" = n."id") THEN 'update' ELSE 'create' END,
      n."id", n."handle", n."title", n."product_type", n."created_at", n."description", n."vendor",
      n."available_for_sale", n."total_inventory", n."min_price_amount", n."min_price_currency_code",
      n."max_price_amount", n."max_price_currency_code"
  FROM new_rows n;
  RETURN NULL;
END
$$;

CREATE FUNCTION "capture_bike_deletes"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  writer BIGINT := pg_current_xact_id()::text::bigint;
BEGIN
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id")
  SELECT "bike_change_position"(o."id", writer), writer, 'delete', o."id" FROM old_rows o;
  RETURN NULL;
END
$$;

-- A TRUNCATE deletes every bike: each a delete, written before the rows go.
CREATE FUNCTION "capture_bike_truncate"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  writer BIGINT := pg_current_xact_id()::text::bigint;
BEGIN
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id")
  SELECT "bike_change_position"("id", writer), writer, 'delete', "id" FROM "bikes" ORDER BY "seq";
  RETURN NULL;
END
$$;

CREATE TRIGGER "bikes_changes_on_insert" AFTER INSERT ON "bikes"
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "capture_bike_inserts"();
CREATE TRIGGER "bikes_changes_on_update" AFTER UPDATE ON "bikes"
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "capture_bike_updates"();
CREATE TRIGGER "bikes_changes_on_delete" AFTER DELETE ON "bikes"
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "capture_bike_deletes"();
CREATE TRIGGER "bikes_changes_on_truncate" BEFORE TRUNCATE ON "bikes"
FOR EACH STATEMENT EXECUTE FUNCTION "capture_bike_truncate"();

-- Whoever writes, restores and logical replication included.
ALTER TABLE "bikes" ENABLE ALWAYS TRIGGER "bikes_changes_on_insert";
ALTER TABLE "bikes" ENABLE ALWAYS TRIGGER "bikes_changes_on_update";
ALTER TABLE "bikes" ENABLE ALWAYS TRIGGER "bikes_changes_on_delete";
ALTER TABLE "bikes" ENABLE ALWAYS TRIGGER "bikes_changes_on_truncate";

-- Prunes the log: looks at the next `max_rows` changes past the horizon, in the feed's order, up to
-- the first one not older than `older_than` or written by a transaction that may still be running
-- (so nothing can appear behind the horizon). Each change looked at supersedes the earlier changes
-- of its bike, which go; a delete goes too. The horizon moves to the last change looked at. Every
-- bike there is keeps its latest change, so the feed from its start rebuilds the catalog. Runs one
-- at a time, with its owner's rights (the service's role may delete nothing of the log itself).
-- Returns how many changes it looked at (fewer than `max_rows`: it has caught up) and deleted.
CREATE FUNCTION "prune_bike_changes"("older_than" TIMESTAMPTZ, "max_rows" INTEGER,
    OUT "looked_at" INTEGER, OUT "deleted" INTEGER)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM FROM "bike_changes_pruning" FOR UPDATE;
  WITH next AS (
    SELECT c."change_id", c."txid", c."kind", c."bike_id",
           c."changed_at" < "older_than" AND c."txid" < pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS "settled"
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
REVOKE ALL ON FUNCTION "prune_bike_changes"(TIMESTAMPTZ, INTEGER) FROM PUBLIC;
