-- Inventory and price range by vendor and product type (one row per currency).
SELECT vendor,
       product_type,
       min_price_currency_code AS currency,
       count(*)                AS bikes,
       sum(total_inventory)    AS units_in_stock,
       min(min_price_amount)   AS lowest_price,
       max(max_price_amount)   AS highest_price
FROM bikes
GROUP BY vendor, product_type, min_price_currency_code
ORDER BY vendor, product_type, currency;
