'use strict';

/**
 * The benchmark's reference: the four read routes the benchmark drives, on plain node:http and
 * pg, running the same SQL the service sends (copied from Prisma's query log) and writing the
 * same JSON. No framework, no ORM, no logging: what the service is measured against.
 *
 *   DATABASE_URL=postgresql://... PORT=3001 node bench/baseline.js
 */
const http = require('node:http');
const { Pool } = require('pg');

const COLUMNS =
  '"public"."bikes"."id", "public"."bikes"."handle", "public"."bikes"."title", "public"."bikes"."product_type", ' +
  '"public"."bikes"."created_at", "public"."bikes"."description", "public"."bikes"."vendor", ' +
  '"public"."bikes"."available_for_sale", "public"."bikes"."total_inventory", "public"."bikes"."min_price_amount", ' +
  '"public"."bikes"."min_price_currency_code", "public"."bikes"."max_price_amount", "public"."bikes"."max_price_currency_code"';

const SQL = {
  byId: `SELECT ${COLUMNS} FROM "public"."bikes" WHERE ("public"."bikes"."id" = $1 AND 1=1) LIMIT $2 OFFSET $3`,
  byHandle: `SELECT ${COLUMNS} FROM "public"."bikes" WHERE "public"."bikes"."handle" = $1 ORDER BY "public"."bikes"."seq" ASC LIMIT $2 OFFSET $3`,
  firstBatch: `SELECT ${COLUMNS}, "public"."bikes"."seq" FROM "public"."bikes" WHERE 1=1 ORDER BY "public"."bikes"."seq" ASC LIMIT $1 OFFSET $2`,
  nextBatch: `SELECT ${COLUMNS}, "public"."bikes"."seq" FROM "public"."bikes" WHERE "public"."bikes"."seq" > $1 ORDER BY "public"."bikes"."seq" ASC LIMIT $2 OFFSET $3`,
  firstSearchBatch: `SELECT ${COLUMNS}, "public"."bikes"."seq" FROM "public"."bikes" WHERE "public"."bikes"."title"::text LIKE ('%' || $1 || '%') ORDER BY "public"."bikes"."seq" ASC LIMIT $2 OFFSET $3`,
  nextSearchBatch: `SELECT ${COLUMNS}, "public"."bikes"."seq" FROM "public"."bikes" WHERE ("public"."bikes"."title"::text LIKE ('%' || $1 || '%') AND "public"."bikes"."seq" > $2) ORDER BY "public"."bikes"."seq" ASC LIMIT $3 OFFSET $4`,
};

const BATCH = 1000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function toBike(row) {
  return {
    id: row.id,
    handle: row.handle,
    title: row.title,
    productType: row.product_type,
    createdAt: row.created_at,
    description: row.description,
    vendor: row.vendor,
    availableForSale: row.available_for_sale,
    totalInventory: row.total_inventory,
    priceRange: {
      minPrice: { amount: row.min_price_amount, currencyCode: row.min_price_currency_code },
      maxPrice: { amount: row.max_price_amount, currencyCode: row.max_price_currency_code },
    },
  };
}

const escapeLike = (term) => term.replace(/[\\%_]/g, '\\$&');

function send(res, status, body) {
  const text = body === undefined ? http.STATUS_CODES[status] : JSON.stringify(body);
  res.writeHead(status, {
    'content-type': body === undefined ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

async function sendOne(pool, res, sql, params) {
  const { rows } = await pool.query(sql, params);
  if (rows.length === 0) send(res, 404);
  else send(res, 200, toBike(rows[0]));
}

function write(res, text) {
  if (res.write(text)) return Promise.resolve();
  return new Promise((resolve) => res.once('drain', resolve));
}

/** Keyset batches of 1000, written as they arrive; the first is read before the status goes out. */
async function sendArray(pool, res, term) {
  const first = term
    ? await pool.query(SQL.firstSearchBatch, [escapeLike(term), BATCH, 0])
    : await pool.query(SQL.firstBatch, [BATCH, 0]);
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
  try {
    let rows = first.rows;
    let text = '[';
    for (;;) {
      if (rows.length > 0) {
        await write(res, text + JSON.stringify(rows.map(toBike)).slice(1, -1));
        text = ',';
      }
      if (rows.length < BATCH) break;
      const after = rows[rows.length - 1].seq;
      rows = term
        ? (await pool.query(SQL.nextSearchBatch, [escapeLike(term), after, BATCH, 0])).rows
        : (await pool.query(SQL.nextBatch, [after, BATCH, 0])).rows;
    }
    res.end(text === '[' ? '[]' : ']');
  } catch (err) {
    res.destroy(err);
  }
}

async function handle(pool, req, res) {
  const url = new URL(req.url, 'http://localhost');
  const path = url.pathname;
  if (req.method !== 'GET') return send(res, 405);
  if (path === '/bikes/all') return sendArray(pool, res, '');
  if (path === '/bikes/search/by-title') return sendArray(pool, res, url.searchParams.get('query') ?? '');
  if (path.startsWith('/bikes/by-handle/')) {
    return sendOne(pool, res, SQL.byHandle, [decodeURIComponent(path.slice('/bikes/by-handle/'.length)), 1, 0]);
  }
  const id = path.slice('/bikes/'.length);
  if (path.startsWith('/bikes/') && UUID.test(id)) return sendOne(pool, res, SQL.byId, [id.toLowerCase(), 1, 0]);
  return send(res, 404);
}

function main() {
  const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL_SIZE ?? 10) });
  const server = http.createServer((req, res) => {
    handle(pool, req, res).catch(() => (res.headersSent ? res.destroy() : send(res, 500)));
  });
  server.keepAliveTimeout = 5_000;
  server.listen(Number(process.env.PORT ?? 3001), () => console.log(`baseline listening on ${server.address().port}`));
  const stop = () => server.close(() => pool.end().then(() => process.exit(0)));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (require.main === module) main();

module.exports = { SQL };
