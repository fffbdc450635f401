-- Inventory and price range by vendor and product type (one row per currency). Units are added
-- in numeric, exactly (docs/reporting.md#exact-figures).
SELECT vendor,
       product_type,
       min_price_currency_code             AS currency,
       count(*)                            AS bikes,
       sum(total_inventory::text::numeric) AS units_in_stock,
       min(min_price_amount)               AS lowest_price,
       max(max_price_amount)               AS highest_price
FROM bikes
GROUP BY vendor, product_type, min_price_currency_code
ORDER BY vendor, product_type, currency;
