-- Webhooks (docs/webhooks.md): the operator's subscriptions, each a position in the change log
-- (what it has been delivered: every change at or before it), and the recent attempts of each.
-- Delivery is at least once: the position moves only after a receiver answered 2xx. One instance
-- at a time delivers a subscription: the one holding its lease ("lease_holder" until
-- "lease_until", renewed while it delivers; plain statements, so it works through a transaction
-- pooler).

-- CreateTable
CREATE TABLE "webhook_subscriptions" (
    "id" UUID NOT NULL,
    "url" TEXT NOT NULL,
    "events" TEXT[] NOT NULL,
    "secret" TEXT NOT NULL,
    "previous_secret" TEXT,
    "previous_secret_until" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "position_txid" BIGINT NOT NULL,
    "position_change_id" BIGINT NOT NULL,
    "horizon_txid" BIGINT NOT NULL,
    "horizon_change_id" BIGINT NOT NULL,
    "triggers" TEXT,
    "state" TEXT NOT NULL DEFAULT 'active',
    "reason" TEXT,
    "failed_attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3),
    "lease_holder" TEXT,
    "lease_until" TIMESTAMPTZ(3),

    CONSTRAINT "webhook_subscriptions_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "webhook_subscriptions_state" CHECK ("state" IN ('active', 'disabled', 'behind'))
);

-- CreateTable
CREATE TABLE "webhook_deliveries" (
    "delivery_id" BIGSERIAL NOT NULL,
    "subscription_id" UUID NOT NULL,
    "webhook_id" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "attempt" INTEGER NOT NULL,
    "status" INTEGER,
    "error" TEXT,
    "attempted_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "duration_ms" INTEGER NOT NULL,

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("delivery_id")
);

-- CreateIndex
CREATE INDEX "webhook_deliveries_subscription_id_delivery_id_idx" ON "webhook_deliveries"("subscription_id", "delivery_id");
CREATE INDEX "webhook_deliveries_attempted_at_idx" ON "webhook_deliveries"("attempted_at");

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_subscription_id_fkey" FOREIGN KEY ("subscription_id") REFERENCES "webhook_subscriptions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
