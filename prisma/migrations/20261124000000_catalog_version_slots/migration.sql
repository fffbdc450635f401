-- The catalog version without one hot row. Every write to "bikes" bumped the single
-- "catalog_version" row and held its lock until commit (through the WAL flush), so all writers
-- queued on it. Now a write bumps one of 32 slots, picked by the writer's backend, and the
-- version is the sum of the slots: every committed change adds at least 1, and a snapshot that
-- sees a sum sees exactly the changes that make it (later snapshots see a superset, so two
-- snapshots with one sum saw the same changes). A statement that changes no row bumps nothing.
-- The triggers fire whatever session_replication_role is (ENABLE ALWAYS), so pg_restore
-- --disable-triggers aside, restores and logical replication change the version too.
--
-- "catalog_identity" names this catalog: made here, and made anew by the service when it finds
-- itself on a copy (another database or cluster than the one recorded), so that ETags never
-- repeat across catalogs.

-- DropTrigger
DROP TRIGGER "bikes_bump_catalog_version" ON "bikes";
DROP FUNCTION "bump_catalog_version"();

-- DropTable
DROP TABLE "catalog_version";

-- CreateTable
CREATE TABLE "catalog_version_slots" (
    "slot" INTEGER NOT NULL,
    "version" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "catalog_version_slots_pkey" PRIMARY KEY ("slot")
);

INSERT INTO "catalog_version_slots" ("slot") SELECT generate_series(0, 31);

-- CreateTable
CREATE TABLE "catalog_identity" (
    "id" BOOLEAN NOT NULL DEFAULT true,
    "catalog_id" UUID NOT NULL,
    "database_oid" BIGINT NOT NULL,
    "system_identifier" BIGINT NOT NULL,

    CONSTRAINT "catalog_identity_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "catalog_identity_one_row" CHECK ("id")
);

INSERT INTO "catalog_identity" ("catalog_id", "database_oid", "system_identifier")
SELECT gen_random_uuid(), (SELECT oid FROM pg_database WHERE datname = current_database())::bigint, system_identifier
FROM pg_control_system();

CREATE FUNCTION "bump_catalog_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE "catalog_version_slots" SET "version" = "version" + 1 WHERE "slot" = pg_backend_pid() % 32;
  ELSIF EXISTS (SELECT FROM changed_rows) THEN
    UPDATE "catalog_version_slots" SET "version" = "version" + 1 WHERE "slot" = pg_backend_pid() % 32;
  END IF;
  RETURN NULL;
END
$$;

-- A trigger with a transition table serves one event, so one each.
CREATE TRIGGER "bikes_version_on_insert" AFTER INSERT ON "bikes"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "bump_catalog_version"();
CREATE TRIGGER "bikes_version_on_update" AFTER UPDATE ON "bikes"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "bump_catalog_version"();
CREATE TRIGGER "bikes_version_on_delete" AFTER DELETE ON "bikes"
REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "bump_catalog_version"();
CREATE TRIGGER "bikes_version_on_truncate" AFTER TRUNCATE ON "bikes"
FOR EACH STATEMENT EXECUTE FUNCTION "bump_catalog_version"();

ALTER TABLE "bikes" ENABLE ALWAYS TRIGGER "bikes_version_on_insert";
ALTER TABLE "bikes" ENABLE ALWAYS TRIGGER "bikes_version_on_update";
ALTER TABLE "bikes" ENABLE ALWAYS TRIGGER "bikes_version_on_delete";
ALTER TABLE "bikes" ENABLE ALWAYS TRIGGER "bikes_version_on_truncate";
