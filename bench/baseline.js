'use strict';

/**
 * The benchmark's reference: the routes the benchmark drives (the reads, a shopper's search page,
 * and the create, replace and patch), on plain node:http and pg, running the same SQL the service
 * sends and writing the same JSON. No framework, no logging, no token or body checks: what the service is measured
 * against.
 *
 *   DATABASE_URL=postgresql://... PORT=3001 node bench/baseline.js
 */
const { randomUUID } = require('node:crypto');
const http = require('node:http');
const { Pool } = require('pg');

const {
  BATCH,
  BEFORE_FIRST_SEQ,
  SQL,
  deriveHandle,
  escapeLike,
  insertValues,
  patchValues,
  toBike,
} = require('./minimal/sql');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A shopper's search page (`GET /bikes?q=<words>&limit=<n>`, by relevance): the statement the
 * service sends for it, as the service's own compiler writes it (some 12,000 characters: the
 * words' queries, the sample, the count and the ranks in turn; src/bikes/pages.ts), taken once by
 * handing the service's readPage a query function that keeps the text instead of running it. Its
 * rows are the catalog's version, then the page's bikes and one more (their fields by the model's
 * names, and seq and keys), written as the service writes a page's bikes.
 */
const { readPage } = require('../dist/bikes/pages.js');

const searchStatements = new Map();

async function searchStatement(limit) {
  let statement = searchStatements.get(limit);
  if (statement === undefined) {
    const query = async (text, _values, name) => {
      statement = { text, name };
      return { rows: [] };
    };
    // The capture answers no rows, so readPage stops short of a page: only the text is wanted.
    await readPage(query, { sort: 'relevance', filters: { q: 'word' }, limit }).catch(() => undefined);
    searchStatements.set(limit, statement);
  }
  return statement;
}

const fromModelRow = (row) => ({
  id: row.id,
  handle: row.handle,
  title: row.title,
  productType: row.productType,
  createdAt: row.createdAt,
  description: row.description,
  vendor: row.vendor,
  availableForSale: row.availableForSale,
  totalInventory: row.totalInventory,
  priceRange: {
    minPrice: { amount: row.minPriceAmount, currencyCode: row.minPriceCurrencyCode },
    maxPrice: { amount: row.maxPriceAmount, currencyCode: row.maxPriceCurrencyCode },
  },
});

async function sendSearch(pool, res, q, limit) {
  const { text, name } = await searchStatement(limit);
  const { rows } = await pool.query({ text, name, values: [q] });
  const bikes = rows.filter((row) => row.seq !== null).slice(0, limit);
  send(res, 200, bikes.map(fromModelRow));
}

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

/**
 * Keyset batches. As the service does: a result of one batch goes out as one body; a larger one
 * is written batch by batch, after the first two are read.
 */
async function sendArray(pool, res, term) {
  const pattern = term ? `%${escapeLike(term)}%` : undefined;
  const batch = async (after) => {
    const { rows } =
      pattern === undefined
        ? await pool.query(SQL.batch, [after, BATCH])
        : await pool.query(SQL.titleBatch, [pattern, after, BATCH]);
    return rows;
  };
  const first = await batch(BEFORE_FIRST_SEQ);
  const second = first.length < BATCH ? [] : await batch(first[first.length - 1].seq);
  if (second.length === 0) return send(res, 200, first.map(toBike));
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
  try {
    let rows = second;
    await write(res, '[' + JSON.stringify(first.concat(second).map(toBike)).slice(1, -1));
    while (rows.length === BATCH) {
      rows = await batch(rows[rows.length - 1].seq);
      if (rows.length > 0) await write(res, ',' + JSON.stringify(rows.map(toBike)).slice(1, -1));
    }
    res.end(']');
  } catch (err) {
    res.destroy(err);
  }
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

async function writeBike(pool, req, res, id) {
  const body = await readJson(req);
  if (req.method === 'POST') {
    return sendOne(
      pool,
      res,
      SQL.create,
      insertValues({ ...body, id: randomUUID(), handle: deriveHandle(body.title) }),
    );
  }
  if (req.method === 'PUT') {
    const { id: _id, handle, ...fields } = body;
    return sendOne(pool, res, SQL.replace, insertValues({ ...fields, id, handle }));
  }
  return sendOne(pool, res, SQL.patch, patchValues(id, body));
}

async function handle(pool, req, res) {
  const url = new URL(req.url, 'http://localhost');
  const path = url.pathname;
  if (req.method === 'POST' && path === '/bikes/') return writeBike(pool, req, res);
  if ((req.method === 'PUT' || req.method === 'PATCH') && UUID.test(path.slice('/bikes/'.length))) {
    return writeBike(pool, req, res, path.slice('/bikes/'.length).toLowerCase());
  }
  if (req.method !== 'GET') return send(res, 405);
  if (path === '/bikes/all') return sendArray(pool, res, '');
  if (path === '/bikes' && url.searchParams.has('q')) {
    return sendSearch(pool, res, url.searchParams.get('q'), Number(url.searchParams.get('limit') ?? 24));
  }
  if (path === '/bikes/search/by-title') return sendArray(pool, res, url.searchParams.get('query') ?? '');
  if (path.startsWith('/bikes/by-handle/')) {
    return sendOne(pool, res, SQL.firstByHandle, [decodeURIComponent(path.slice('/bikes/by-handle/'.length))]);
  }
  const id = path.slice('/bikes/'.length);
  if (path.startsWith('/bikes/') && UUID.test(id)) return sendOne(pool, res, SQL.byId, [id.toLowerCase()]);
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
