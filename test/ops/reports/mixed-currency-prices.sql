-- Data check: bikes whose price range mixes currencies (the reports above group by the
-- currency of the lowest price, so these would be counted in that currency).
SELECT id,
       title,
       min_price_currency_code,
       max_price_currency_code
FROM bikes
WHERE min_price_currency_code <> max_price_currency_code
ORDER BY title;
