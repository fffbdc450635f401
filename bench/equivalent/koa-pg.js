'use strict';

/**
 * Koa + @koa/router + pg with the service's features, each from the middleware people reach for:
 * a request log at info with an X-Request-Id on every response (pino-http), a request-duration
 * histogram by route and status (prom-client), CORS for one origin (@koa/cors), compression over
 * 1 KB at level 1 (koa-compress), ETags and 304s (koa-conditional-get, @koa/etag); writes need a
 * bearer token (jsonwebtoken) and a body (koa-bodyparser) that passes the service's yup schemas.
 * A page of bikes (GET /bikes?limit=, oldest first, a Link to the next), its query checked by yup,
 * for the bench's parts of a page (bench/parts.js). The baseline's SQL and JSON (../minimal/sql.js).
 *
 *   DATABASE_URL=... JWT_SECRET=... CORS_ORIGIN=... PORT=... node bench/equivalent/koa-pg.js
 */
const { randomUUID } = require('node:crypto');
const cors = require('@koa/cors');
const etag = require('@koa/etag');
const Router = require('@koa/router');
const Koa = require('koa');
const bodyParser = require('koa-bodyparser');
const compress = require('koa-compress');
const conditional = require('koa-conditional-get');
const { Pool } = require('pg');
const pinoHttp = require('pino-http');
const yup = require('yup');
const { bikeFields, patch, replacement } = require('../../dist/bikes/bike.js');
const {
  BEFORE_FIRST_SEQ,
  SQL,
  deriveHandle,
  insertValues,
  patchValues,
  searchRows,
  toBike,
} = require('../minimal/sql');
const { serve } = require('../minimal/serve');
const { COMPRESSION, CORS_ORIGIN, logger, register, requestDuration, verifyBearer } = require('./features');

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });

async function one(ctx, text, values) {
  const { rows } = await pool.query(text, values);
  if (rows.length === 0) ctx.status = 404;
  else ctx.body = toBike(rows[0]);
}

const requestLog = pinoHttp({ logger, genReqId: (req) => req.headers['x-request-id'] ?? randomUUID() });

const authenticated = (ctx, next) => {
  ctx.state.user = verifyBearer(ctx.get('Authorization'));
  return next();
};

/** The body, checked strictly (no coercion) against `schema`: 400 when it fails. */
const valid = (schema) => async (ctx, next) => {
  try {
    await schema.validate(ctx.request.body, { strict: true, abortEarly: false });
  } catch (err) {
    ctx.throw(400, err.message);
  }
  return next();
};

const pageQuery = yup.object({
  limit: yup.number().integer().min(1).max(250).default(24),
  after: yup
    .string()
    .matches(/^-?\d{1,19}$/)
    .default(BEFORE_FIRST_SEQ),
});

const router = new Router();
router.get('/bikes', async (ctx) => {
  let query;
  try {
    query = await pageQuery.validate(ctx.query);
  } catch (err) {
    ctx.throw(400, err.message);
  }
  const { rows } = await pool.query(SQL.batch, [query.after, query.limit + 1]);
  const page = rows.slice(0, query.limit);
  if (rows.length > query.limit) {
    ctx.set('Link', `</bikes?limit=${query.limit}&after=${page[page.length - 1].seq}>; rel="next"`);
  }
  ctx.body = page.map(toBike);
});
router.get('/bikes/search/by-title', async (ctx) => {
  ctx.body = (await searchRows(pool, String(ctx.query.query ?? ''))).map(toBike);
});
router.get('/bikes/by-handle/:handle', (ctx) => one(ctx, SQL.firstByHandle, [ctx.params.handle]));
router.get('/bikes/:id', (ctx) => one(ctx, SQL.byId, [ctx.params.id.toLowerCase()]));
router.post('/bikes', authenticated, bodyParser(), valid(bikeFields), (ctx) => {
  const body = ctx.request.body;
  return one(ctx, SQL.create, insertValues({ ...body, id: randomUUID(), handle: deriveHandle(body.title) }));
});
router.put('/bikes/:id', authenticated, bodyParser(), valid(replacement), (ctx) =>
  one(ctx, SQL.replace, insertValues({ ...ctx.request.body, id: ctx.params.id.toLowerCase() })),
);
router.patch('/bikes/:id', authenticated, bodyParser(), valid(patch), (ctx) =>
  one(ctx, SQL.patch, patchValues(ctx.params.id.toLowerCase(), ctx.request.body)),
);
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
