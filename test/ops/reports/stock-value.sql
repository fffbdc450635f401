-- Value of the stock per currency: units on hand times the lowest and the highest price.
SELECT min_price_currency_code                                              AS currency,
       sum(total_inventory)                                                 AS units,
       coalesce(sum(total_inventory) FILTER (WHERE available_for_sale), 0) AS units_for_sale,
       round(sum(total_inventory * min_price_amount)::numeric, 2)           AS value_at_lowest_price,
       round(sum(total_inventory * max_price_amount)::numeric, 2)           AS value_at_highest_price
FROM bikes
GROUP BY min_price_currency_code
ORDER BY currency;
