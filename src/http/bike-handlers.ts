import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type Koa from 'koa';
import { type Bike, deriveHandle } from '../bikes/bike';
import { type BikeRepository, PRECONDITION_FAILED, type StoredBike } from '../bikes/repository';
import type { API_ROUTES } from './api-routes';
import { bikeJson, bikesJson } from './bike-json';
import { entityTags, notModified, writePrecondition } from './conditional';
import { HttpError } from './errors';
import type { Handlers } from './route';

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

/**
 * X-Read-From is a list (it may come as `primary, replica`, or twice): any element `primary`
 * asks for the primary; any other value is ignored (docs/decisions.md, rule 20).
 */
function wantsPrimary(ctx: Koa.Context): boolean {
  return ctx
    .get('X-Read-From')
    .split(',')
    .some((value) => value.trim().toLowerCase() === 'primary');
}

/**
 * The bike operations' handlers (their routes are declared in api-routes.ts). Reads come from
 * `bikes`, which may read a replica, unless the client asks for the primary with
 * `X-Read-From: primary` (to read its own writes); writes always go to the primary.
 */
export function bikeHandlers(bikes: BikeRepository, onPrimary: BikeRepository, catalogId: string) {
  const tags = entityTags(catalogId);
  /**
   * Where the read goes. While a replica answers for a primary that cannot be reached, the answer
   * says so (rule 26): X-Stale, with the commit time of the last transaction the replica has
   * replayed and its age in seconds (or `unknown`). Set before the read, under the state the read
   * is served in; an error answer drops it (errors.ts).
   */
  function reader(ctx: Koa.Context): BikeRepository {
    const repository = wantsPrimary(ctx) ? onPrimary : bikes;
    const stale = repository.stale();
    if (stale) {
      const { replayedAt } = stale;
      const age = replayedAt && ((Date.now() - replayedAt.getTime()) / 1000).toFixed(3);
      ctx.set('X-Stale', replayedAt ? `as-of=${replayedAt.toISOString()}; age=${age}` : 'unknown');
    }
    return repository;
  }
  const precondition = (ctx: Koa.Context) => writePrecondition(ctx, tags.versionOf);

  /** One bike, or 304 when the client's copy is current. */
  function sendBike(ctx: Koa.Context, { bike, version }: StoredBike): void {
    if (notModified(ctx, tags.bike(version))) return;
    ctx.type = 'application/json';
    ctx.body = bikeJson(bike);
  }

  /** A written bike, with the ETag of its new state; 412 when the write's precondition failed. */
  function sendWritten(ctx: Koa.Context, written: StoredBike | typeof PRECONDITION_FAILED): void {
    if (written === PRECONDITION_FAILED) throw new HttpError(412);
    ctx.set('ETag', tags.bike(written.version));
    ctx.body = written.bike;
  }

  // Reads answer 304 to a client whose copy is current (see conditional.ts). A list's ETag is
  // the catalog version, read in the same snapshot as the rows, so it stands for exactly them.
  return {
    async listBikes(ctx) {
      const list = await reader(ctx).list();
      if (notModified(ctx, tags.list(list.version))) return list.close();
      await sendBikeArray(ctx, list.batches);
    },

    async searchBikesByTitle(ctx, { query }) {
      const term = query.query ?? '';
      const list = await reader(ctx).list({ titleContains: term });
      if (notModified(ctx, tags.list(list.version, term))) return list.close();
      await sendBikeArray(ctx, list.batches);
    },

    async getBikeByHandle(ctx) {
      sendBike(ctx, (await reader(ctx).findFirstByHandle(ctx.params.handle)) ?? notFound());
    },

    async getBike(ctx) {
      sendBike(ctx, (await reader(ctx).findById(ctx.params.id.toLowerCase())) ?? notFound());
    },

    async createBike(ctx, { body, headers }) {
      const create = { id: randomUUID(), handle: deriveHandle(body.title), fields: body };
      const key = headers['idempotency-key'];
      if (key === undefined) return sendWritten(ctx, await onPrimary.create(create.id, create.handle, create.fields));
      // Rule 24: the fields as checked (unknown ones dropped), in the schema's order.
      const fingerprint = createHash('sha256').update(JSON.stringify(body)).digest('base64url');
      const outcome = await onPrimary.createOnce(key, fingerprint, create);
      switch (outcome.kind) {
        case 'created':
          return sendWritten(ctx, outcome.stored);
        case 'replay':
          ctx.set('Idempotent-Replayed', 'true');
          ctx.set('ETag', tags.bike(outcome.version));
          ctx.type = 'application/json';
          ctx.body = outcome.response;
          return;
        case 'mismatch':
          throw new HttpError(422);
        case 'in-flight':
          throw new HttpError(409);
      }
    },

    async replaceBike(ctx, { body }) {
      const { id: _ignored, handle, ...fields } = body;
      sendWritten(ctx, await onPrimary.replace(ctx.params.id.toLowerCase(), handle, fields, precondition(ctx)));
    },

    async updateBike(ctx, { body }) {
      sendWritten(ctx, (await onPrimary.patch(ctx.params.id.toLowerCase(), body, precondition(ctx))) ?? notFound());
    },

    async deleteBike(ctx) {
      const id = ctx.params.id.toLowerCase();
      const deleted = await onPrimary.delete(id, precondition(ctx));
      if (deleted === PRECONDITION_FAILED) throw new HttpError(412);
      if (!deleted) notFound();
      ctx.body = { id };
    },
  } satisfies Partial<Handlers<typeof API_ROUTES>>;
}

function notFound(): never {
  throw new HttpError(404);
}
