'use strict';

/**
 * The service's writes built from well-known libraries: Koa + @koa/router, Prisma Client 7 (the
 * pg driver adapter), a request log at info (pino-http), a request-duration histogram by route
 * and status (prom-client), a bearer token (jsonwebtoken), and a body (koa-bodyparser) that
 * passes the service's yup schemas. Creates with `create`, replaces with `upsert`, patches with
 * `update`, mapped to the model's fields by the service's own functions, so the same JSON goes
 * out. Needs dist/ (npm run build) for the generated client.
 *
 *   DATABASE_URL=... JWT_SECRET=... PORT=... node bench/equivalent/koa-prisma.js
 */
const { randomUUID } = require('node:crypto');
const Router = require('@koa/router');
const { PrismaPg } = require('@prisma/adapter-pg');
const Koa = require('koa');
const bodyParser = require('koa-bodyparser');
const { Pool } = require('pg');
const pinoHttp = require('pino-http');
const { bikeFields, deriveHandle, patch, replacement } = require('../../dist/bikes/bike.js');
const { BIKE_SELECT, fromModelFields, toModelFields } = require('../../dist/bikes/fields.js');
const { PrismaClient } = require('../../dist/generated/prisma/client.js');
const { serve } = require('../minimal/serve');
const { logger, register, requestDuration, verifyBearer } = require('./features');

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });

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

/** The model's fields of the fields a patch carries, and only those (undefined: left as it is). */
function toModelPatch(patch) {
  const { priceRange } = patch;
  return {
    handle: patch.handle,
    title: patch.title,
    productType: patch.productType,
    createdAt: patch.createdAt,
    description: patch.description,
    vendor: patch.vendor,
    availableForSale: patch.availableForSale,
    totalInventory: patch.totalInventory,
    minPriceAmount: priceRange?.minPrice.amount,
    minPriceCurrencyCode: priceRange?.minPrice.currencyCode,
    maxPriceAmount: priceRange?.maxPrice.amount,
    maxPriceCurrencyCode: priceRange?.maxPrice.currencyCode,
  };
}

const router = new Router();
router.post('/bikes', authenticated, bodyParser(), valid(bikeFields), async (ctx) => {
  const body = ctx.request.body;
  const data = toModelFields({ ...body, id: randomUUID(), handle: deriveHandle(body.title) });
  ctx.body = fromModelFields(await prisma.bike.create({ data, select: BIKE_SELECT }));
});
router.put('/bikes/:id', authenticated, bodyParser(), valid(replacement), async (ctx) => {
  const create = toModelFields({ ...ctx.request.body, id: ctx.params.id.toLowerCase() });
  const { id, ...update } = create;
  ctx.body = fromModelFields(await prisma.bike.upsert({ where: { id }, create, update, select: BIKE_SELECT }));
});
router.patch('/bikes/:id', authenticated, bodyParser(), valid(patch), async (ctx) => {
  try {
    const where = { id: ctx.params.id.toLowerCase() };
    const data = toModelPatch(ctx.request.body);
    ctx.body = fromModelFields(await prisma.bike.update({ where, data, select: BIKE_SELECT }));
  } catch (err) {
    if (err.code !== 'P2025') throw err; // no such bike
    ctx.status = 404;
  }
});
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
app.use(router.routes());
serve(app.callback(), () => prisma.$disconnect().then(() => pool.end()));
