'use strict';

/**
 * The reads as a shop's engineer would write them, with the same libraries as ./koa-pg.js: a
 * plain parameterised statement (`SELECT <the bike's columns> FROM bikes WHERE id = $1`, and the
 * oldest bike with a handle), sent unnamed as pg sends a query, with no version columns; the
 * answer tagged by @koa/etag with the hash of its body, and a 304 from koa-conditional-get. The
 * same request log, metrics, CORS and compression as ./koa-pg.js (./features.js). GET by id and
 * by handle only: the peer the goals of the reads are judged by (bench/run.js).
 *
 *   DATABASE_URL=... CORS_ORIGIN=... PORT=... node bench/equivalent/koa-plain.js
 */
const { randomUUID } = require('node:crypto');
const cors = require('@koa/cors');
const etag = require('@koa/etag');
const Router = require('@koa/router');
const Koa = require('koa');
const compress = require('koa-compress');
const conditional = require('koa-conditional-get');
const { Pool } = require('pg');
const pinoHttp = require('pino-http');
const { toBike } = require('../minimal/sql');
const { serve } = require('../minimal/serve');
const { COMPRESSION, CORS_ORIGIN, logger, register, requestDuration } = require('./features');

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });

const COLUMNS = `id, handle, title, product_type, created_at, description, vendor, available_for_sale,
  total_inventory, min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code`;
const BY_ID = `SELECT ${COLUMNS} FROM bikes WHERE id = $1`;
const BY_HANDLE = `SELECT ${COLUMNS} FROM bikes WHERE handle = $1 ORDER BY seq LIMIT 1`;

async function one(ctx, text, values) {
  const { rows } = await pool.query(text, values);
  if (rows.length === 0) ctx.status = 404;
  else ctx.body = toBike(rows[0]);
}

const requestLog = pinoHttp({ logger, genReqId: (req) => req.headers['x-request-id'] ?? randomUUID() });

const router = new Router();
router.get('/bikes/by-handle/:handle', (ctx) => one(ctx, BY_HANDLE, [ctx.params.handle]));
router.get('/bikes/:id', (ctx) => one(ctx, BY_ID, [ctx.params.id.toLowerCase()]));
router.get('/metrics', async (ctx) => {
  ctx.type = register.contentType;
  ctx.body = await register.metrics();
});

const app = new Koa();
app.use((ctx, next) => {
  requestLog(ctx.req, ctx.res);
  ctx.set('X-Request-Id', ctx.req.id);
  return next();
});
app.use((ctx, next) => {
  const end = requestDuration.startTimer();
  ctx.res.once('close', () => end({ method: ctx.method, route: ctx._matchedRoute ?? 'unmatched', status: ctx.status }));
  return next();
});
app.use(cors({ origin: CORS_ORIGIN }));
app.use(compress({ ...COMPRESSION, deflate: false }));
app.use(conditional());
app.use(etag());
app.use(router.routes());
serve(app.callback(), () => pool.end());
