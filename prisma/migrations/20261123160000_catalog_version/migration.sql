-- One row counting the committed changes to "bikes": list and search ETags are taken from it,
-- so a conditional GET can answer 304 without reading the catalog. A statement-level trigger
-- bumps it inside the writing transaction, whoever writes (the service, psql, another
-- instance), so a reader never sees a version whose changes it cannot see yet.

-- CreateTable
CREATE TABLE "catalog_version" (
    "id" BOOLEAN NOT NULL DEFAULT true,
    "version" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "catalog_version_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "catalog_version_one_row" CHECK ("id")
);

INSERT INTO "catalog_version" ("id", "version") VALUES (true, 0);

CREATE FUNCTION "bump_catalog_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "catalog_version" SET "version" = "version" + 1;
  RETURN NULL;
END
$$;

CREATE TRIGGER "bikes_bump_catalog_version"
AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "bikes"
FOR EACH STATEMENT EXECUTE FUNCTION "bump_catalog_version"();
