-- Stock movement by vendor over a period: the units each change of a bike added to or took from
-- its stock, against the bike's change before it. A create brings its stock in, a delete takes
-- the last known stock out, and a bike moved to another vendor takes its stock out of the old one
-- and into the new; so a vendor's net change is its stock at the end of the period less its stock
-- at the start. Units are counted in numeric, exactly (docs/reporting.md#exact-figures). The
-- period is the last 30 days: edit its line for another.
WITH period AS (SELECT now() - interval '30 days' AS since, now() AS until),
changes AS (
  SELECT changed_at, kind, vendor,
         total_inventory::text::numeric                 AS stock,
         lag(vendor)                         OVER bike AS previous_vendor,
         lag(total_inventory::text::numeric) OVER bike AS previous_stock
  FROM bike_changes
  WHERE bike_id IN (SELECT bike_id FROM bike_changes, period WHERE changed_at >= since AND changed_at < until)
  WINDOW bike AS (PARTITION BY bike_id ORDER BY txid, change_id)
),
in_period AS (
  SELECT changes.* FROM changes, period WHERE changed_at >= since AND changed_at < until
),
movements AS (
  -- Into the bike's vendor: its stock, less what it had there before.
  SELECT vendor,
         stock - CASE WHEN vendor = previous_vendor THEN previous_stock ELSE 0 END AS units
  FROM in_period
  WHERE kind <> 'delete'
  UNION ALL
  -- Out of the vendor it had before, when it has it no more (a delete, a move).
  SELECT previous_vendor, -previous_stock
  FROM in_period
  WHERE previous_vendor IS DISTINCT FROM vendor AND previous_vendor IS NOT NULL
)
SELECT vendor,
       coalesce(sum(units) FILTER (WHERE units > 0), 0)  AS units_in,
       coalesce(-sum(units) FILTER (WHERE units < 0), 0) AS units_out,
       sum(units)                                         AS net_change
FROM movements
WHERE units <> 0
GROUP BY vendor
ORDER BY vendor;
