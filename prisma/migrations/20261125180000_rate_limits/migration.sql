-- Rate-limit counters (docs/decisions.md, rule 28), shared by every instance. UNLOGGED: a
-- counter is not worth a WAL record and a flush at every write it counts, and one lost in a
-- crash only forgets a client's recent requests. (An unlogged table is empty on replicas.)

-- CreateTable
CREATE UNLOGGED TABLE "rate_limits" (
    "key" TEXT NOT NULL,
    "points" INTEGER NOT NULL DEFAULT 0,
    "expire" BIGINT,

    CONSTRAINT "rate_limits_pkey" PRIMARY KEY ("key")
);
