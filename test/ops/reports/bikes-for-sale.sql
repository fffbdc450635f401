-- Bikes a customer can buy now: for sale and in stock, cheapest first.
SELECT title,
       vendor,
       product_type,
       total_inventory         AS in_stock,
       min_price_amount        AS from_price,
       max_price_amount        AS to_price,
       min_price_currency_code AS currency
FROM bikes
WHERE available_for_sale
  AND total_inventory > 0
ORDER BY min_price_amount, title;
