-- The service's role keeps the catalog but not its bookkeeping (docs/decisions.md#the-services-role):
-- the triggers that count versions run with their owner's rights (SECURITY DEFINER), so the role
-- the service queries as needs no right to change catalog_version_slots or the version sequence,
-- and the migrations grant it none. Their search_path is fixed to the schema they were made in.

CREATE OR REPLACE FUNCTION "bump_catalog_version"() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE "catalog_version_slots" SET "version" = "version" + 1 WHERE "slot" = pg_backend_pid() % 32;
  ELSIF EXISTS (SELECT FROM changed_rows) THEN
    UPDATE "catalog_version_slots" SET "version" = "version" + 1 WHERE "slot" = pg_backend_pid() % 32;
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION "next_bike_version"() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  NEW."version" := nextval('"bikes_version_seq"');
  RETURN NEW;
END
$$;

-- Idempotency keys are a client's own (docs/decisions.md#idempotency-keys): the same key from
-- another client is another key. A replay answers with the ETag of the bike as created, which
-- names its version and the transaction that wrote it. Keys live 24 hours; those made before
-- this migration had no client and are dropped.
DROP TABLE "idempotency_keys";

-- CreateTable
CREATE TABLE "idempotency_keys" (
    "client" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "bike_id" UUID NOT NULL,
    "bike_version" BIGINT NOT NULL,
    "bike_xmin" BIGINT NOT NULL,
    "response" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("client", "key")
);

-- CreateIndex
CREATE INDEX "idempotency_keys_created_at_idx" ON "idempotency_keys"("created_at");

-- The catalog's identity is read at run time from what a copy, a restore or a failover cannot
-- carry over (docs/decisions.md#catalog-identity): this row keeps only the random part of it,
-- and no one but the migrations writes it.
ALTER TABLE "catalog_identity" DROP COLUMN "database_oid", DROP COLUMN "system_identifier";
