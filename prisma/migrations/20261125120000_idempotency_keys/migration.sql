-- Idempotency-Key on POST /bikes/ (docs/decisions.md, rule 24): each key that created a bike,
-- written in the bike's own transaction, with the answer, so that a retry gets it again.

-- CreateTable
CREATE TABLE "idempotency_keys" (
    "key" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "bike_id" UUID NOT NULL,
    "bike_version" BIGINT NOT NULL,
    "response" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE INDEX "idempotency_keys_created_at_idx" ON "idempotency_keys"("created_at");
