-- A version for every bike, from one sequence: a new bike takes the next value, and every update
-- of a row takes the next again (a trigger, whoever writes: the service, reporting SQL, a
-- restore). So a version names one state of one bike and is never given to another state, even
-- of a bike deleted and made again under its id. The strong ETag of a bike is made of it, and
-- conditional writes (If-Match) compare it in the same statement that writes.

-- AlterTable
ALTER TABLE "bikes" ADD COLUMN "version" BIGSERIAL NOT NULL;

CREATE FUNCTION "next_bike_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW."version" := nextval('"bikes_version_seq"');
  RETURN NEW;
END
$$;

CREATE TRIGGER "bikes_row_version" BEFORE UPDATE ON "bikes"
FOR EACH ROW EXECUTE FUNCTION "next_bike_version"();
-- Also when session_replication_role is replica (a restore, logical replication).
ALTER TABLE "bikes" ENABLE ALWAYS TRIGGER "bikes_row_version";
