-- Price changes over a period: each change of a bike's lowest or highest price, or of its currency
-- (the lowest price's), from what the bike's change before it had to what it has, and when. A
-- create or a delete is no price change. The period is the last 30 days: edit its line for another.
WITH period AS (SELECT now() - interval '30 days' AS since, now() AS until),
changes AS (
  SELECT changed_at, txid, change_id, kind, bike_id, title, vendor,
         min_price_currency_code, min_price_amount, max_price_amount,
         lag(kind)                    OVER bike AS previous_kind,
         lag(min_price_currency_code) OVER bike AS previous_currency,
         lag(min_price_amount)        OVER bike AS previous_min_price,
         lag(max_price_amount)        OVER bike AS previous_max_price
  FROM bike_changes
  WHERE bike_id IN (SELECT bike_id FROM bike_changes, period WHERE changed_at >= since AND changed_at < until)
  WINDOW bike AS (PARTITION BY bike_id ORDER BY txid, change_id)
)
SELECT changed_at,
       bike_id,
       title,
       vendor,
       previous_currency       AS currency_from,
       previous_min_price      AS min_price_from,
       previous_max_price      AS max_price_from,
       min_price_currency_code AS currency_to,
       min_price_amount        AS min_price_to,
       max_price_amount        AS max_price_to
FROM changes, period
WHERE changed_at >= since AND changed_at < until
  AND kind = 'update'
  AND previous_kind IS NOT NULL
  AND (previous_currency, previous_min_price, previous_max_price)
      IS DISTINCT FROM (min_price_currency_code, min_price_amount, max_price_amount)
ORDER BY changed_at, txid, change_id;
