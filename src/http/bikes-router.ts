import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import Router from '@koa/router';
import type Koa from 'koa';
import type { Tokens } from '../auth/tokens';
import { type Bike, bikeFields, deriveHandle, patch, replacement } from '../bikes/bike';
import { validate } from '../bikes/yup';
import type { BikeRepository } from '../bikes/repository';
import { HttpError } from './errors';
import { type Policy, routes } from './route';

/**
 * Sends the bikes as one JSON array. A result that fits in one batch goes out as one plain body
 * (most searches); a larger one is written batch by batch as rows arrive. The first two batches
 * are read before the status is sent, so a database that is down gives a 503; a failure later
 * destroys the connection, so the client sees a broken response, never a short array.
 */
async function sendBikeArray(ctx: Koa.Context, batches: AsyncGenerator<Bike[]>): Promise<void> {
  const first = await batches.next();
  const second = first.done ? first : await batches.next();
  ctx.type = 'application/json';
  if (first.done || second.done) {
    ctx.body = first.done ? '[]' : JSON.stringify(first.value);
    return;
  }
  let head: string | undefined = '[' + JSON.stringify(first.value.concat(second.value)).slice(1, -1);
  async function* chunks() {
    yield head as string;
    head = undefined;
    for await (const batch of batches) yield ',' + JSON.stringify(batch).slice(1, -1);
    yield ']';
  }
  ctx.body = Readable.from(chunks(), { objectMode: false });
}

/** The search term: one `query` parameter, or none (every bike). Anything else is a failed search: 400. */
function searchTerm(ctx: Koa.Context): string {
  const query = ctx.query.query;
  if (query === undefined) return '';
  if (Array.isArray(query) || query.includes('\u0000')) throw new HttpError(400);
  return query;
}

/**
 * How each bike route answers what it cannot accept (see route.ts), by operation: the routes
 * below and the OpenAPI document both read it.
 */
export const BIKE_POLICIES = {
  listBikes: {},
  getBike: {},
  getBikeByHandle: {},
  searchBikesByTitle: {},
  createBike: { token: true, body: true, invalid: 400 },
  // Every failure of a replace is a 404, as the specification says.
  replaceBike: { token: true, body: true, invalid: 404 },
  updateBike: { token: true, body: true, invalid: 400 },
  deleteBike: { token: true, invalid: 404 },
} satisfies Record<string, Policy>;

export function bikesRouter(bikes: BikeRepository, tokens: Tokens): Router {
  const router = new Router({ prefix: '/bikes' });
  const route = routes(tokens);

  // "all" names the list, never a bike: the id routes pass /bikes/all by without answering, so
  // any method but GET and HEAD there is a 405 (see methodNotAllowed), not a 401 or a 404.
  router.param('id', (id, _ctx, next) => (id.toLowerCase() === 'all' ? undefined : next()));

  router.get(
    '/all',
    route(BIKE_POLICIES.listBikes, (ctx) => sendBikeArray(ctx, bikes.listInBatches())),
  );

  router.get(
    '/search/by-title',
    route(BIKE_POLICIES.searchBikesByTitle, (ctx) =>
      sendBikeArray(ctx, bikes.listInBatches({ titleContains: searchTerm(ctx) })),
    ),
  );

  router.get(
    '/by-handle/:handle',
    route(BIKE_POLICIES.getBikeByHandle, async (ctx) => {
      ctx.body = (await bikes.findFirstByHandle(ctx.params.handle)) ?? fail(404);
    }),
  );

  router.get(
    '/:id',
    route(BIKE_POLICIES.getBike, async (ctx) => {
      ctx.body = (await bikes.findById(ctx.params.id.toLowerCase())) ?? fail(404);
    }),
  );

  router.post(
    '/',
    route(BIKE_POLICIES.createBike, async (ctx, body) => {
      const fields = validate(bikeFields, body) ?? fail(400);
      ctx.body = await bikes.create(randomUUID(), deriveHandle(fields.title), fields);
    }),
  );

  router.put(
    '/:id',
    route(BIKE_POLICIES.replaceBike, async (ctx, body) => {
      const { id: _ignored, handle, ...fields } = validate(replacement, body) ?? fail(404);
      ctx.body = await bikes.replace(ctx.params.id.toLowerCase(), handle, fields);
    }),
  );

  router.patch(
    '/:id',
    route(BIKE_POLICIES.updateBike, async (ctx, body) => {
      const id = ctx.params.id.toLowerCase();
      const changes = validate(patch, body);
      // The bike must exist before its fields are judged: a missing bike is 404 first.
      if (!changes) fail((await bikes.findById(id)) ? 400 : 404);
      ctx.body = (await bikes.patch(id, changes)) ?? fail(404);
    }),
  );

  router.delete(
    '/:id',
    route(BIKE_POLICIES.deleteBike, async (ctx) => {
      const id = ctx.params.id.toLowerCase();
      if (!(await bikes.delete(id))) fail(404);
      ctx.body = { id };
    }),
  );

  return router;
}

function fail(status: 400 | 404): never {
  throw new HttpError(status);
}
