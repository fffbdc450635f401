-- Browsing (docs/decisions.md#paged-listing): GET /bikes pages through the catalog in one of its
-- orders, filtered, by keyset: every page is a range of an index, however deep.
--
-- A b-tree entry cannot exceed 2704 bytes, and the bike's strings have no length limit: each
-- string a page is ordered or filtered by is indexed by its first 200 characters, a "key" column
-- PostgreSQL keeps itself (generated), in the "C" collation (code point order, as the
-- case-sensitive search compares). A filter compares the key, then the whole string; an order
-- is the key's, then the insertion order.

-- AlterTable
ALTER TABLE "bikes"
    ADD COLUMN "title_key" TEXT COLLATE "C" NOT NULL GENERATED ALWAYS AS (left("title", 200)) STORED,
    ADD COLUMN "vendor_key" TEXT COLLATE "C" NOT NULL GENERATED ALWAYS AS (left("vendor", 200)) STORED,
    ADD COLUMN "product_type_key" TEXT COLLATE "C" NOT NULL GENERATED ALWAYS AS (left("product_type", 200)) STORED,
    ADD COLUMN "min_price_currency_key" TEXT COLLATE "C" NOT NULL
        GENERATED ALWAYS AS (left("min_price_currency_code", 200)) STORED;

-- "updated_at" is when the bike last changed, whoever changed it: set by the trigger that gives
-- every update its version, which fires whoever writes.
CREATE OR REPLACE FUNCTION "next_bike_version"() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  NEW."version" := nextval('"bikes_version_seq"');
  NEW."updated_at" := now();
  RETURN NEW;
END
$$;

-- CreateIndex: each order, alone and after each of the two filters a storefront browses by.
CREATE INDEX "bikes_by_title" ON "bikes"("title_key", "seq");
CREATE INDEX "bikes_by_price" ON "bikes"("min_price_currency_key", "min_price_amount", "seq");
CREATE INDEX "bikes_by_updated_at" ON "bikes"("updated_at", "seq");
CREATE INDEX "bikes_by_vendor" ON "bikes"("vendor_key", "seq");
CREATE INDEX "bikes_by_vendor_title" ON "bikes"("vendor_key", "title_key", "seq");
CREATE INDEX "bikes_by_vendor_price" ON "bikes"("vendor_key", "min_price_currency_key", "min_price_amount", "seq");
CREATE INDEX "bikes_by_vendor_updated_at" ON "bikes"("vendor_key", "updated_at", "seq");
CREATE INDEX "bikes_by_product_type" ON "bikes"("product_type_key", "seq");
CREATE INDEX "bikes_by_product_type_title" ON "bikes"("product_type_key", "title_key", "seq");
CREATE INDEX "bikes_by_product_type_price" ON "bikes"("product_type_key", "min_price_currency_key", "min_price_amount", "seq");
CREATE INDEX "bikes_by_product_type_updated_at" ON "bikes"("product_type_key", "updated_at", "seq");
