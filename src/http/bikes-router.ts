import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import Router from '@koa/router';
import type Koa from 'koa';
import type { Tokens } from '../auth/tokens';
import { type Bike, bikeFields, deriveHandle, patch, replacement } from '../bikes/bike';
import { validate } from '../bikes/yup';
import type { BikeRepository } from '../bikes/repository';
import { bikeJson, bikesJson } from './bike-json';
import { entityTags, notModified } from './conditional';
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
    ctx.body = first.done ? '[]' : bikesJson(first.value);
    return;
  }
  let head: string | undefined = '[' + bikesJson(first.value.concat(second.value)).slice(1, -1);
  async function* chunks() {
    yield head as string;
    head = undefined;
    try {
      for await (const batch of batches) yield ',' + bikesJson(batch).slice(1, -1);
    } catch (err) {
      // Cut the connection, so the client sees a broken response (a compressing stream in
      // between would otherwise wait for the rest forever).
      ctx.res.destroy();
      throw err;
    }
    yield ']';
  }
  const body = Readable.from(chunks(), { objectMode: false });
  // However the response ends (whole, cut, HEAD, a compressor in between), the batches end with
  // it, and with them the list's snapshot and its connection (a HEAD never starts `chunks`).
  ctx.res.once('close', () => {
    body.destroy();
    void batches.return(undefined);
  });
  ctx.body = body;
}

/** One bike, or 304 when the client's copy is current. */
function sendBike(ctx: Koa.Context, bike: Bike, tag: (body: string) => string): void {
  const body = bikeJson(bike);
  if (notModified(ctx, tag(body))) return;
  ctx.type = 'application/json';
  ctx.body = body;
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

/**
 * The bike routes. Reads come from `bikes`, which may read a replica, unless the client asks
 * for the primary with `X-Read-From: primary` (to read its own writes); writes, and the
 * existence check of a PATCH, always go to the primary.
 */
export function bikesRouter(
  bikes: BikeRepository,
  onPrimary: BikeRepository,
  tokens: Tokens,
  catalogId: string,
): Router {
  const tags = entityTags(catalogId);
  const reader = (ctx: Koa.Context) => (ctx.get('X-Read-From').toLowerCase() === 'primary' ? onPrimary : bikes);
  const router = new Router({ prefix: '/bikes' });
  const route = routes(tokens);

  // "all" names the list, never a bike: the id routes pass /bikes/all by without answering, so
  // any method but GET and HEAD there is a 405 (see methodNotAllowed), not a 401 or a 404.
  router.param('id', (id, _ctx, next) => (id.toLowerCase() === 'all' ? undefined : next()));

  // Reads answer 304 to a client whose copy is current (see conditional.ts). A list's ETag is
  // the catalog version, read in the same snapshot as the rows, so it stands for exactly them.
  router.get(
    '/all',
    route(BIKE_POLICIES.listBikes, async (ctx) => {
      const list = await reader(ctx).list();
      if (notModified(ctx, tags.list(list.version))) return list.close();
      await sendBikeArray(ctx, list.batches);
    }),
  );

  router.get(
    '/search/by-title',
    route(BIKE_POLICIES.searchBikesByTitle, async (ctx) => {
      const term = searchTerm(ctx);
      const list = await reader(ctx).list({ titleContains: term });
      if (notModified(ctx, tags.list(list.version, term))) return list.close();
      await sendBikeArray(ctx, list.batches);
    }),
  );

  router.get(
    '/by-handle/:handle',
    route(BIKE_POLICIES.getBikeByHandle, async (ctx) => {
      sendBike(ctx, (await reader(ctx).findFirstByHandle(ctx.params.handle)) ?? fail(404), tags.body);
    }),
  );

  router.get(
    '/:id',
    route(BIKE_POLICIES.getBike, async (ctx) => {
      sendBike(ctx, (await reader(ctx).findById(ctx.params.id.toLowerCase())) ?? fail(404), tags.body);
    }),
  );

  router.post(
    '/',
    route(BIKE_POLICIES.createBike, async (ctx, body) => {
      const fields = validate(bikeFields, body) ?? fail(400);
      ctx.body = await onPrimary.create(randomUUID(), deriveHandle(fields.title), fields);
    }),
  );

  router.put(
    '/:id',
    route(BIKE_POLICIES.replaceBike, async (ctx, body) => {
      const { id: _ignored, handle, ...fields } = validate(replacement, body) ?? fail(404);
      ctx.body = await onPrimary.replace(ctx.params.id.toLowerCase(), handle, fields);
    }),
  );

  router.patch(
    '/:id',
    route(BIKE_POLICIES.updateBike, async (ctx, body) => {
      const id = ctx.params.id.toLowerCase();
      const changes = validate(patch, body);
      // The bike must exist before its fields are judged: a missing bike is 404 first.
      if (!changes) fail((await onPrimary.findById(id)) ? 400 : 404);
      ctx.body = (await onPrimary.patch(id, changes)) ?? fail(404);
    }),
  );

  router.delete(
    '/:id',
    route(BIKE_POLICIES.deleteBike, async (ctx) => {
      const id = ctx.params.id.toLowerCase();
      if (!(await onPrimary.delete(id))) fail(404);
      ctx.body = { id };
    }),
  );

  return router;
}

function fail(status: 400 | 404): never {
  throw new HttpError(status);
}
