-- Who wrote each change (docs/decisions.md#who-changed-what): the change log's three writer
-- columns, filled by its triggers. A write through the API names its caller in the setting
-- "bike_catalog.writer", which its own statement sets for its transaction alone
-- (set_config(..., true)) before it changes a row: the text of a text[] {subject, issuer}, the
-- issuer null when the subject is only claimed. Without it (SQL by hand, a restore, the seed) the
-- writer is the database role that wrote, "sql:<session_user>". Changes logged before this
-- migration have no writer (all three null).

-- AlterTable
ALTER TABLE "bike_changes"
    ADD COLUMN "changed_by" TEXT,
    ADD COLUMN "changed_by_proven" BOOLEAN,
    ADD COLUMN "changed_by_issuer" TEXT;

-- The writer of the changes the running statement makes. A value set by hand must be one of the
-- service's form, or the write fails.
CREATE FUNCTION "bike_change_writer"(OUT "changed_by" TEXT, OUT "changed_by_proven" BOOLEAN, OUT "changed_by_issuer" TEXT)
LANGUAGE sql STABLE SET search_path FROM CURRENT AS $$
  SELECT CASE WHEN w IS NULL THEN 'sql:' || session_user ELSE w[1] END, w IS NULL OR w[2] IS NOT NULL, w[2]
    FROM (SELECT nullif(current_setting('bike_catalog.writer', true), '')::text[] AS w) setting
$$;

-- The change_feed migration's capture functions, each with the writer: the same columns besides.
CREATE OR REPLACE FUNCTION "capture_bike_inserts"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  writer BIGINT := pg_current_xact_id()::text::bigint;
BEGIN
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id", "handle", "title", "product_type",
      "created_at", "description", "vendor", "available_for_sale", "total_inventory", "min_price_amount",
      "min_price_currency_code", "max_price_amount", "max_price_currency_code",
      "changed_by", "changed_by_proven", "changed_by_issuer")
  SELECT "bike_change_position"(n."id", writer), writer, 'create', n."id", n."handle", n."title", n."product_type",
      n."created_at", n."description", n."vendor", n."available_for_sale", n."total_inventory", n."min_price_amount",
      n."min_price_currency_code", n."max_price_amount", n."max_price_currency_code",
      w."changed_by", w."changed_by_proven", w."changed_by_issuer"
  FROM new_rows n, "bike_change_writer"() w;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION "capture_bike_updates"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  writer BIGINT := pg_current_xact_id()::text::bigint;
BEGIN
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id",
      "changed_by", "changed_by_proven", "changed_by_issuer")
  SELECT "bike_change_position"(o."id", writer), writer, 'delete', o."id",
      w."changed_by", w."changed_by_proven", w."changed_by_issuer"
  FROM old_rows o, "bike_change_writer"() w WHERE NOT EXISTS (SELECT FROM new_rows n WHERE n."id" = o."id");
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id", "handle", "title", "product_type",
      "created_at", "description", "vendor", "available_for_sale", "total_inventory", "min_price_amount",
      "min_price_currency_code", "max_price_amount", "max_price_currency_code",
      "changed_by", "changed_by_proven", "changed_by_issuer")
  SELECT "bike_change_position"(n."id", writer), writer,
      CASE WHEN EXISTS (SELECT FROM old_rows o WHERE o."id" = n."id") THEN 'update' ELSE 'create' END,
      n."id", n."handle", n."title", n."product_type", n."created_at", n."description", n."vendor",
      n."available_for_sale", n."total_inventory", n."min_price_amount", n."min_price_currency_code",
      n."max_price_amount", n."max_price_currency_code",
      w."changed_by", w."changed_by_proven", w."changed_by_issuer"
  FROM new_rows n, "bike_change_writer"() w;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION "capture_bike_deletes"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  writer BIGINT := pg_current_xact_id()::text::bigint;
BEGIN
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id",
      "changed_by", "changed_by_proven", "changed_by_issuer")
  SELECT "bike_change_position"(o."id", writer), writer, 'delete', o."id",
      w."changed_by", w."changed_by_proven", w."changed_by_issuer"
  FROM old_rows o, "bike_change_writer"() w;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION "capture_bike_truncate"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  writer BIGINT := pg_current_xact_id()::text::bigint;
BEGIN
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id",
      "changed_by", "changed_by_proven", "changed_by_issuer")
  SELECT "bike_change_position"("id", writer), writer, 'delete', "id",
      w."changed_by", w."changed_by_proven", w."changed_by_issuer"
  FROM "bikes", "bike_change_writer"() w ORDER BY "seq";
  RETURN NULL;
END
$$;
