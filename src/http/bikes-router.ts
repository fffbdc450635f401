import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import Router, { type RouterContext } from '@koa/router';
import type Koa from 'koa';
import type { Tokens } from '../auth/tokens';
import { type Bike, deriveHandle } from '../bikes/bike';
import type { BikeRepository } from '../bikes/repository';
import { parseCreateBody, parsePatchBody, parseReplaceBody } from '../bikes/schema';
import { requireToken } from './auth';
import { readBody } from './body';
import { HttpError } from './errors';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path id that is not a UUID cannot name a bike: 404 on every route (after the token check). */
const requireUuid: Koa.Middleware = async (ctx, next) => {
  if (!UUID.test((ctx as unknown as RouterContext).params.id)) throw new HttpError(404);
  await next();
};

function idOf(ctx: Koa.Context): string {
  return (ctx as unknown as RouterContext).params.id.toLowerCase();
}

/**
 * Sends the bikes as one JSON array. A result that fits in one batch goes out as one plain body
 * (most searches: no stream to set up, one write); a larger one is written batch by batch as rows
 * arrive. The first two batches are read before the status is sent, so a database that is down
 * gives a 503; a failure later destroys the connection, so the client sees a broken response,
 * never a short array.
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

/** The search term: one `query` parameter, or none (every bike). Anything else is a failed search. */
function searchTerm(ctx: Koa.Context): string {
  const query = ctx.query.query;
  if (query === undefined) return '';
  if (Array.isArray(query) || query.includes('\u0000')) throw new HttpError(400);
  return query;
}

export function bikesRouter(bikes: BikeRepository, tokens: Tokens): Router {
  const router = new Router({ prefix: '/bikes' });
  const auth = requireToken(tokens);

  // "all" names the list, never a bike: the id routes pass /bikes/all by without answering, so
  // any method but GET and HEAD there is a 405 (see methodNotAllowed), not a 401 or a 404.
  router.param('id', (id, _ctx, next) => (id.toLowerCase() === 'all' ? undefined : next()));

  router.get('/all', async (ctx) => {
    await sendBikeArray(ctx, bikes.listInBatches());
  });

  router.get('/search/by-title', async (ctx) => {
    const term = searchTerm(ctx);
    await sendBikeArray(ctx, bikes.listInBatches({ titleContains: term }));
  });

  router.get('/by-handle/:handle', async (ctx) => {
    const bike = await bikes.findFirstByHandle(ctx.params.handle);
    if (!bike) throw new HttpError(404);
    ctx.body = bike;
  });

  router.get('/:id', requireUuid, async (ctx) => {
    const bike = await bikes.findById(idOf(ctx));
    if (!bike) throw new HttpError(404);
    ctx.body = bike;
  });

  router.post('/', auth, readBody(400), async (ctx) => {
    const fields = parseCreateBody(ctx.request.body);
    if (!fields.ok) throw new HttpError(400);
    ctx.body = await bikes.create(randomUUID(), deriveHandle(fields.value.title), fields.value);
  });

  // Every failure of a replace is a 404, as the specification says.
  router.put('/:id', auth, requireUuid, readBody(404), async (ctx) => {
    const body = parseReplaceBody(ctx.request.body);
    if (!body.ok) throw new HttpError(404);
    const { handle, ...fields } = body.value;
    ctx.body = await bikes.replace(idOf(ctx), handle, fields);
  });

  router.patch('/:id', auth, requireUuid, readBody(400), async (ctx) => {
    const id = idOf(ctx);
    const patch = parsePatchBody(ctx.request.body);
    if (!patch.ok) {
      // The bike must exist before its fields are judged: a missing bike is 404 first.
      throw new HttpError((await bikes.findById(id)) ? 400 : 404);
    }
    const bike = await bikes.patch(id, patch.value);
    if (!bike) throw new HttpError(404);
    ctx.body = bike;
  });

  router.delete('/:id', auth, requireUuid, async (ctx) => {
    const id = idOf(ctx);
    if (!(await bikes.delete(id))) throw new HttpError(404);
    ctx.body = { id };
  });

  return router;
}
