-- Who changed this bike's price, and when: each price it was given (on create, or by a change of
-- its lowest or highest price, or of its currency), from what its change before had (null: none
-- kept), and who wrote it: the token's name and who vouches for it ("claimed": no one, the caller
-- only said so; the operator's issuer; the identity provider's), or "sql:<role>" (vouched for by
-- the "database"), a write outside the API. The bike is the one whose handle the next line names
-- (each of them, if several had it): edit it, or write "bike_id = '<its id>'" in its place.
WITH chosen AS (SELECT DISTINCT bike_id FROM bike_changes WHERE handle = 'trek-domane-sl-5'),
changes AS (
  SELECT changed_at, txid, change_id, kind, bike_id,
         min_price_currency_code, min_price_amount, max_price_amount,
         changed_by, changed_by_proven, changed_by_issuer,
         lag(min_price_currency_code) OVER bike AS previous_currency,
         lag(min_price_amount)        OVER bike AS previous_min_price,
         lag(max_price_amount)        OVER bike AS previous_max_price
  FROM bike_changes
  WHERE bike_id IN (SELECT bike_id FROM chosen)
  WINDOW bike AS (PARTITION BY bike_id ORDER BY txid, change_id)
)
SELECT changed_at,
       bike_id,
       changed_by,
       CASE changed_by_proven WHEN false THEN 'claimed'
                              WHEN true THEN coalesce(changed_by_issuer, 'database') END AS vouched_by,
       previous_currency       AS currency_from,
       previous_min_price      AS min_price_from,
       previous_max_price      AS max_price_from,
       min_price_currency_code AS currency_to,
       min_price_amount        AS min_price_to,
       max_price_amount        AS max_price_to
FROM changes
WHERE kind <> 'delete'
  AND (previous_currency, previous_min_price, previous_max_price)
      IS DISTINCT FROM (min_price_currency_code, min_price_amount, max_price_amount)
ORDER BY changed_at, txid, change_id;
