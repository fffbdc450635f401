-- Value of the stock per currency: units on hand times the lowest and the highest price, in
-- numeric, exactly (docs/reporting.md#exact-figures), the values rounded to the cent.
WITH stock AS (
  SELECT min_price_currency_code         AS currency,
         available_for_sale,
         total_inventory::text::numeric  AS units,
         min_price_amount::text::numeric AS lowest_price,
         max_price_amount::text::numeric AS highest_price
  FROM bikes
)
SELECT currency,
       sum(units)                                                AS units,
       coalesce(sum(units) FILTER (WHERE available_for_sale), 0) AS units_for_sale,
       round(sum(units * lowest_price), 2)                       AS value_at_lowest_price,
       round(sum(units * highest_price), 2)                      AS value_at_highest_price
FROM stock
GROUP BY currency
ORDER BY currency;
