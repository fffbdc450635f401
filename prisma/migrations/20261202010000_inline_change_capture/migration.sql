-- Change capture at a fraction of its cost (issue 42; measured by bench/writes.js): the same
-- changes, positions and writers, computed inside the capture functions instead of by a call per
-- change. bike_change_position, bike_change_writer and the changed_by_scopes default
-- (bike_change_writer_scopes) each fix their search_path, so PostgreSQL can neither inline them
-- nor call them without saving and restoring its settings: three such calls a create, one of
-- them (the position) a SQL function run apart, its subquery planned for it. Now each capture
-- function reads the writer's setting once, into a variable, and asks each change's position in
-- its own INSERT; the scopes are written by the function too, so the column's default is not
-- called (it stays, for SQL that writes the log some other way, as the triggers alone may).
--
-- The rules are those of the migrations change_feed, change_writers and api_keys, unchanged: a
-- change's position is the writer's transaction id, or the newest position of a change to that
-- bike already there, if larger; the writer is the setting "bike_catalog.writer" as the service
-- sets it (a value of another form fails the write), else "sql:<session_user>"; the scopes are
-- the setting's third element, split at spaces. The three functions stay, for reports and the
-- tests that read them.

-- On the path the functions are made with, as in functions_ignore_temporary_tables.
SELECT set_config('search_path', current_setting('search_path') || ', pg_temp', true);

CREATE OR REPLACE FUNCTION "capture_bike_inserts"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  writer BIGINT := pg_current_xact_id()::text::bigint;
  w TEXT[] := nullif(current_setting('bike_catalog.writer', true), '')::text[];
BEGIN
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id", "handle", "title", "product_type",
      "created_at", "description", "vendor", "available_for_sale", "total_inventory", "min_price_amount",
      "min_price_currency_code", "max_price_amount", "max_price_currency_code",
      "changed_by", "changed_by_proven", "changed_by_issuer", "changed_by_scopes")
  SELECT greatest(writer, coalesce((SELECT max(c."txid") FROM "bike_changes" c WHERE c."bike_id" = n."id"), 0)),
      writer, 'create', n."id", n."handle", n."title", n."product_type",
      n."created_at", n."description", n."vendor", n."available_for_sale", n."total_inventory", n."min_price_amount",
      n."min_price_currency_code", n."max_price_amount", n."max_price_currency_code",
      CASE WHEN w IS NULL THEN 'sql:' || session_user ELSE w[1] END, w IS NULL OR w[2] IS NOT NULL, w[2],
      string_to_array(w[3], ' ')
  FROM new_rows n;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION "capture_bike_updates"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  writer BIGINT := pg_current_xact_id()::text::bigint;
  w TEXT[] := nullif(current_setting('bike_catalog.writer', true), '')::text[];
BEGIN
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id",
      "changed_by", "changed_by_proven", "changed_by_issuer", "changed_by_scopes")
  SELECT greatest(writer, coalesce((SELECT max(c."txid") FROM "bike_changes" c WHERE c."bike_id" = o."id"), 0)),
      writer, 'delete', o."id",
      CASE WHEN w IS NULL THEN 'sql:' || session_user ELSE w[1] END, w IS NULL OR w[2] IS NOT NULL, w[2],
      string_to_array(w[3], ' ')
  FROM old_rows o WHERE NOT EXISTS (SELECT FROM new_rows n WHERE n."id" = o."id");
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id", "handle", "title", "product_type",
      "created_at", "description", "vendor", "available_for_sale", "total_inventory", "min_price_amount",
      "min_price_currency_code", "max_price_amount", "max_price_currency_code",
      "changed_by", "changed_by_proven", "changed_by_issuer", "changed_by_scopes")
  SELECT greatest(writer, coalesce((SELECT max(c."txid") FROM "bike_changes" c WHERE c."bike_id" = n."id"), 0)),
      writer, CASE WHEN EXISTS (SELECT FROM old_rows o WHERE o."id" = n."id") THEN 'update' ELSE 'create' END,
      n."id", n."handle", n."title", n."product_type", n."created_at", n."description", n."vendor",
      n."available_for_sale", n."total_inventory", n."min_price_amount", n."min_price_currency_code",
      n."max_price_amount", n."max_price_currency_code",
      CASE WHEN w IS NULL THEN 'sql:' || session_user ELSE w[1] END, w IS NULL OR w[2] IS NOT NULL, w[2],
      string_to_array(w[3], ' ')
  FROM new_rows n;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION "capture_bike_deletes"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  writer BIGINT := pg_current_xact_id()::text::bigint;
  w TEXT[] := nullif(current_setting('bike_catalog.writer', true), '')::text[];
BEGIN
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id",
      "changed_by", "changed_by_proven", "changed_by_issuer", "changed_by_scopes")
  SELECT greatest(writer, coalesce((SELECT max(c."txid") FROM "bike_changes" c WHERE c."bike_id" = o."id"), 0)),
      writer, 'delete', o."id",
      CASE WHEN w IS NULL THEN 'sql:' || session_user ELSE w[1] END, w IS NULL OR w[2] IS NOT NULL, w[2],
      string_to_array(w[3], ' ')
  FROM old_rows o;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION "capture_bike_truncate"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  writer BIGINT := pg_current_xact_id()::text::bigint;
  w TEXT[] := nullif(current_setting('bike_catalog.writer', true), '')::text[];
BEGIN
  INSERT INTO "bike_changes" ("txid", "writer_txid", "kind", "bike_id",
      "changed_by", "changed_by_proven", "changed_by_issuer", "changed_by_scopes")
  SELECT greatest(writer, coalesce((SELECT max(c."txid") FROM "bike_changes" c WHERE c."bike_id" = b."id"), 0)),
      writer, 'delete', b."id",
      CASE WHEN w IS NULL THEN 'sql:' || session_user ELSE w[1] END, w IS NULL OR w[2] IS NOT NULL, w[2],
      string_to_array(w[3], ' ')
  FROM "bikes" b ORDER BY b."seq";
  RETURN NULL;
END
$$;
