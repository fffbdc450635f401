-- CreateExtension
CREATE EXTENSION IF NOT EXISTS "pg_trgm";

-- CreateTable
CREATE TABLE "bikes" (
    "seq" BIGSERIAL NOT NULL,
    "id" UUID NOT NULL,
    "handle" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "product_type" TEXT NOT NULL,
    "created_at" TEXT NOT NULL,
    "description" TEXT NOT NULL,
    "vendor" TEXT NOT NULL,
    "available_for_sale" BOOLEAN NOT NULL,
    "total_inventory" DOUBLE PRECISION NOT NULL,
    "min_price_amount" DOUBLE PRECISION NOT NULL,
    "min_price_currency_code" TEXT NOT NULL,
    "max_price_amount" DOUBLE PRECISION NOT NULL,
    "max_price_currency_code" TEXT NOT NULL,
    "inserted_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "bikes_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "bikes_seq_key" ON "bikes"("seq");

-- CreateIndex
CREATE INDEX "bikes_handle_seq_idx" ON "bikes"("handle", "seq");

-- CreateIndex
CREATE INDEX "bikes_title_idx" ON "bikes" USING GIN ("title" gin_trgm_ops);
