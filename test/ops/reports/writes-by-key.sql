-- Writes by API key over a period: for each key the operator issued (revoked or not), its scopes,
-- how many bikes its tokens created, updated (PATCH, or PUT over a bike) and deleted, and when it
-- last wrote; a key that wrote nothing in the period shows zeros.
WITH period AS (SELECT now() - interval '30 days' AS since, now() AS until),
writes AS (
  SELECT changed_by AS label, kind, changed_at
  FROM bike_changes, period
  WHERE changed_by_issuer = 'urn:bike-catalog:key'
    AND changed_at >= period.since AND changed_at < period.until
)
SELECT k.label,
       array_to_string(k.scopes, ' ')                 AS scopes,
       count(*) FILTER (WHERE w.kind = 'create')      AS creates,
       count(*) FILTER (WHERE w.kind = 'update')      AS updates,
       count(*) FILTER (WHERE w.kind = 'delete')      AS deletes,
       max(w.changed_at)                              AS last_write,
       k.revoked_at IS NOT NULL                       AS revoked
FROM api_keys k
LEFT JOIN writes w ON w.label = k.label
GROUP BY k.id
ORDER BY k.label;
