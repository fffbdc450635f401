-- API keys the operator issues and revokes (docs/decisions.md#api-keys): each stored only as the
-- SHA-256 of the key, with the scopes it grants. A revoked key keeps its row (its label names its
-- writes in the change log), and its label is never given to another key.

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "label" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "scopes" TEXT[] NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3),
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_label_key" ON "api_keys"("label");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys"("key_hash");

-- The functions below search the temporary schema last (as the migration
-- functions_ignore_temporary_tables says why).
SELECT set_config('search_path', current_setting('search_path') || ', pg_temp', true);

-- A write through the API names its writer in "bike_catalog.writer" (the migration
-- change_writers): now {subject, issuer, scopes, key id}, the scopes space-separated, the key id
-- null unless the token was traded for an API key. Every write's statement asks this of its
-- writer before it changes a row (its writer CTE): a key revoked or expired since its token was
-- issued stops the write there, whatever instance it runs on, with SQLSTATE BCK01.
CREATE FUNCTION "api_key_stands"("writer" TEXT[]) RETURNS BOOLEAN LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT AS $$
BEGIN
  IF "writer"[4] IS NOT NULL AND NOT EXISTS (
    SELECT FROM "api_keys" k
     WHERE k."id" = "writer"[4]::uuid AND k."revoked_at" IS NULL
       AND (k."expires_at" IS NULL OR k."expires_at" > statement_timestamp())
  ) THEN
    RAISE EXCEPTION 'the API key of this token was revoked or has expired' USING ERRCODE = 'BCK01';
  END IF;
  RETURN TRUE;
END
$$;

-- The scopes of the token that wrote the change; null for a write outside the API, and for
-- changes logged before this migration. Filled by its default, in the log's own triggers.
CREATE FUNCTION "bike_change_writer_scopes"() RETURNS TEXT[] LANGUAGE sql STABLE
SET search_path FROM CURRENT AS $$
  SELECT string_to_array(w[3], ' ')
    FROM (SELECT nullif(current_setting('bike_catalog.writer', true), '')::text[] AS w) setting
$$;

-- AlterTable (no default for the rows there are: they keep null, and the table is not rewritten)
ALTER TABLE "bike_changes" ADD COLUMN "changed_by_scopes" TEXT[];
ALTER TABLE "bike_changes" ALTER COLUMN "changed_by_scopes" SET DEFAULT "bike_change_writer_scopes"();
