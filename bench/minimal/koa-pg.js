'use strict';

/**
 * A minimal Koa + @koa/router + pg server: the benchmark's measure of the framework's own cost.
 * GET by id, GET by handle and POST, on the same SQL and with the same JSON as the baseline; no
 * logging, no token or body checks.   DATABASE_URL=postgresql://... PORT=3002 node bench/minimal/koa-pg.js
 */
const { randomUUID } = require('node:crypto');
const Router = require('@koa/router');
const Koa = require('koa');
const bodyParser = require('koa-bodyparser');
const { Pool } = require('pg');
const { SQL, deriveHandle, insertValues, toBike } = require('./sql');
const { serve } = require('./serve');

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });

async function one(ctx, text, values) {
  const { rows } = await pool.query(text, values);
  if (rows.length === 0) ctx.status = 404;
  else ctx.body = toBike(rows[0]);
}

const router = new Router();
router.get('/bikes/by-handle/:handle', (ctx) => one(ctx, SQL.firstByHandle, [ctx.params.handle]));
router.get('/bikes/:id', (ctx) => one(ctx, SQL.byId, [ctx.params.id.toLowerCase()]));
router.post('/bikes', bodyParser(), (ctx) => {
  const body = ctx.request.body;
  return one(ctx, SQL.create, insertValues({ ...body, id: randomUUID(), handle: deriveHandle(body.title) }));
});

const app = new Koa();
app.use(router.routes());
serve(app.callback(), () => pool.end());
