'use strict';

/**
 * Seeds `count` bikes in one INSERT ... SELECT over generate_series: fast, deterministic, and
 * the rows look like the API's (handle derived from the title as the service derives it).
 * Titles end in a 10-hex-digit tag, so a search for a tag is selective (a handful of rows),
 * while a search for a word like "Gravel" matches an eighth of the catalog.
 */
const SEED_SQL = `
INSERT INTO bikes (id, handle, title, product_type, created_at, description, vendor,
                   available_for_sale, total_inventory,
                   min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code)
SELECT
  (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-4' || substr(h, 14, 3) || '-8' || substr(h, 18, 3) || '-' || substr(h, 21, 12))::uuid,
  lower(replace(title, ' ', '-')),
  title,
  kind,
  to_char(timestamp '2024-01-01' + i * interval '7 minutes', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
  'A ' || lower(kind) || ' bike by ' || vendor || ' with a light frame, hydraulic disc brakes and '
    || (8 + i % 5) || ' gears, built for everyday riding in the city and beyond.',
  vendor,
  i % 7 <> 0,
  i % 40,
  399 + (i % 600) + 0.99,
  'USD',
  599 + (i % 900) + 0.5,
  'USD'
FROM (
  SELECT i, md5('bike-' || i) AS h,
         (ARRAY['Hybrid','Road','Mountain','Gravel','City','Fat','Cargo','Touring'])[1 + i % 8] AS kind,
         (ARRAY['Sentra','Velora','Apex','Northwind','Cadence'])[1 + i % 5] AS vendor
  FROM generate_series(1, $1::int) AS i
) AS s,
LATERAL (SELECT kind || ' Bicycle ' || vendor || ' ' || substr(md5('title-' || i), 1, 10) AS title) AS t
ORDER BY i`;

/** @param {import('pg').ClientBase} client @param {number} count */
async function seedBikes(client, count) {
  await client.query(SEED_SQL, [count]);
  // As a catalog that has been running would be: autovacuum has set the visibility map (the facets'
  // index-only scan reads no heap page) and the statistics.
  await client.query('VACUUM ANALYZE bikes');
  await client.query('VACUUM ANALYZE bike_words');
}

module.exports = { seedBikes };
