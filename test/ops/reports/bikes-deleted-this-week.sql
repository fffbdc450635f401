-- Bikes deleted this week (the last 7 days; since Monday: date_trunc('week', now())), each with
-- its title and vendor as the bike's change before the delete last had them.
WITH period AS (SELECT now() - interval '7 days' AS since, now() AS until),
changes AS (
  SELECT changed_at, txid, change_id, kind, bike_id,
         lag(title)  OVER bike AS title,
         lag(vendor) OVER bike AS vendor
  FROM bike_changes
  WHERE bike_id IN (SELECT bike_id FROM bike_changes, period
                    WHERE kind = 'delete' AND changed_at >= since AND changed_at < until)
  WINDOW bike AS (PARTITION BY bike_id ORDER BY txid, change_id)
)
SELECT bike_id,
       title,
       vendor,
       changed_at AS deleted_at
FROM changes, period
WHERE kind = 'delete' AND changed_at >= since AND changed_at < until
ORDER BY deleted_at, txid, change_id;
