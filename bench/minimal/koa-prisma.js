'use strict';

/**
 * A minimal Koa + @koa/router + Prisma Client 7 server (the pg driver adapter, as the service
 * uses it): GET by id (findUnique), GET by handle (findFirst) and POST (create). Needs dist/
 * (npm run build) for the generated client.   DATABASE_URL=... PORT=3003 node bench/minimal/koa-prisma.js
 */
const { randomUUID } = require('node:crypto');
const Router = require('@koa/router');
const Koa = require('koa');
const bodyParser = require('koa-bodyparser');
const { PrismaPg } = require('@prisma/adapter-pg');
const { Pool } = require('pg');
const { PrismaClient } = require('../../dist/generated/prisma/client.js');
// The service's select and mapping of the model's fields: the same query and the same JSON.
const { BIKE_SELECT: SELECT, fromModelFields: toBike } = require('../../dist/bikes/fields.js');
const { deriveHandle } = require('./sql');
const { serve } = require('./serve');

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });

function send(ctx, model) {
  if (model === null) ctx.status = 404;
  else ctx.body = toBike(model);
}

const router = new Router();
router.get('/bikes/by-handle/:handle', async (ctx) =>
  send(
    ctx,
    await prisma.bike.findFirst({ where: { handle: ctx.params.handle }, orderBy: { seq: 'asc' }, select: SELECT }),
  ),
);
router.get('/bikes/:id', async (ctx) =>
  send(ctx, await prisma.bike.findUnique({ where: { id: ctx.params.id.toLowerCase() }, select: SELECT })),
);
router.post('/bikes', bodyParser(), async (ctx) => {
  const body = ctx.request.body;
  const { minPrice, maxPrice } = body.priceRange;
  const data = {
    id: randomUUID(),
    handle: deriveHandle(body.title),
    title: body.title,
    productType: body.productType,
    createdAt: body.createdAt,
    description: body.description,
    vendor: body.vendor,
    availableForSale: body.availableForSale,
    totalInventory: body.totalInventory,
    minPriceAmount: minPrice.amount,
    minPriceCurrencyCode: minPrice.currencyCode,
    maxPriceAmount: maxPrice.amount,
    maxPriceCurrencyCode: maxPrice.currencyCode,
  };
  send(ctx, await prisma.bike.create({ data, select: SELECT }));
});

const app = new Koa();
app.use(router.routes());
serve(app.callback(), () => prisma.$disconnect().then(() => pool.end()));
