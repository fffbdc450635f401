import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type Koa from 'koa';
import { scopeOf } from '../auth/caller';
import { type Bike, deriveHandle } from '../bikes/bike';
import { type BikeRepository, LIST_BATCH_SIZE, PRECONDITION_FAILED, type StoredBike } from '../bikes/repository';
import { WriteOutcomeUnknown } from '../db/pool';
import { changesAfter, pointAfterAll, pointOfSnapshot, START } from '../feed/changes';
import { type API_ROUTES, DEFAULT_CHANGES_PAGE, DEFAULT_PAGE } from './api-routes';
import { bikeJson, bikesJson, changeJson } from './bike-json';
import { type EntityTags, isFresh, setValidators } from './conditional';
import { HttpError } from './errors';
import { type ChangeStreams, wantsEventStream } from './event-stream';
import { type FeedCursors, type OpenedCursor, refusal } from './feed-cursor';
import type { PageCursors } from './page-cursor';
import { invalidFieldHeader } from './invalid-field';
import { callerOf, type Handlers } from './route';

/**
 * Sends the bikes as one JSON array. A result that fits in one batch goes out as one plain body
 * (most searches); a larger one is written batch by batch as rows arrive. The first batch was read
 * before the status is sent (repository.ts, `list`), so a database that fails there gives a 503; a
 * failure later destroys the connection, so the client sees a broken response, never a short array.
 */
async function sendBikeArray(ctx: Koa.Context, batches: AsyncGenerator<Bike[]>, batchSize: number): Promise<void> {
  const first = await batches.next();
  ctx.type = 'application/json';
  if (first.done || first.value.length < batchSize) {
    ctx.body = first.done ? '[]' : bikesJson(first.value);
    void batches.return(undefined);
    return;
  }
  const head = bikesJson(first.value);
  async function* chunks() {
    yield head.slice(0, -1);
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
 * asks for the primary; any other value is ignored (docs/decisions.md#replica-reads).
 */
function wantsPrimary(ctx: Koa.Context): boolean {
  return ctx
    .get('X-Read-From')
    .split(',')
    .some((element) => element.trim().toLowerCase() === 'primary');
}

/**
 * A write of the bike at `path` whose outcome cannot be known (the database stopped answering
 * while it ran): 504, saying so, and naming the bike, so the client can look
 * (docs/decisions.md#a-5xx-says-what-was-written).
 */
async function writing<T>(path: string, write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (err) {
    if (!(err instanceof WriteOutcomeUnknown)) throw err;
    throw new HttpError(504, { 'Write-Outcome': 'unknown', 'Content-Location': path }, { cause: err });
  }
}

/**
 * The bike operations' handlers (their routes are declared in api-routes.ts). Reads come from
 * `bikes`, which may read a replica, unless the client asks for the primary with
 * `X-Read-From: primary` (to read its own writes); writes always go to the primary.
 */
export function bikeHandlers(
  bikes: BikeRepository,
  onPrimary: BikeRepository,
  tags: EntityTags,
  feed: FeedCursors,
  pages: PageCursors,
  streams: ChangeStreams,
) {
  /**
   * Where the read goes. While a replica answers for a primary that cannot be reached, the answer
   * says so (docs/decisions.md#reads-while-the-primary-is-away): X-Stale, with the commit time of
   * the last transaction the replica has replayed and its age in seconds (or `unknown`). Set
   * before the read, under the state the read is served in; an error answer drops it (errors.ts).
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

  /** One bike (a 304 when the client's copy is current: the representation step decides, once its tag is coded). */
  function sendBike(ctx: Koa.Context, { bike, state }: StoredBike): void {
    setValidators(ctx, tags.bike(state));
    ctx.type = 'application/json';
    ctx.body = bikeJson(bike);
  }

  /** A written bike, with the ETag of its new state; 412 when the write's preconditions failed. */
  function sendWritten(ctx: Koa.Context, written: StoredBike | typeof PRECONDITION_FAILED): void {
    if (written === PRECONDITION_FAILED) throw new HttpError(412);
    ctx.set('ETag', tags.bike(written.state));
    ctx.type = 'application/json';
    ctx.body = bikeJson(written.bike);
  }

  /**
   * A list, or a search for `term`: 304 before any row is read when the client's copy is current.
   * Its tag is weak, the same whatever the coding, and names the catalog's version read in the
   * rows' snapshot.
   */
  async function sendList(ctx: Koa.Context, term?: string) {
    const tagOf = (version: string[]) => tags.list(...version, ...(term === undefined ? [] : [term]));
    const conditional = ctx.req.headers['if-none-match'] !== undefined;
    const list = await reader(ctx).list({
      titleContains: term,
      current: conditional ? (version) => isFresh(ctx, tagOf(version)) : undefined,
    });
    // No tag while the catalog's version does not count every change (a trigger switched off).
    if (list.version) setValidators(ctx, tagOf(list.version));
    ctx.set('Catalog-Cursor', feed.seal(pointOfSnapshot(list.seen.snapshot), list.seen));
    if (list.current) {
      ctx.status = 304;
      return;
    }
    await sendBikeArray(ctx, list.batches, LIST_BATCH_SIZE);
  }

  /** The cursor a client sent as `field`, opened; 400 naming the field when it is not one of ours. */
  function openCursor(cursor: string | undefined, field: string): OpenedCursor | undefined {
    if (cursor === undefined) return undefined;
    const opened = feed.open(cursor);
    if (opened === undefined) throw new HttpError(400, invalidFieldHeader(field));
    return opened;
  }

  return {
    /**
     * A page of GET /bikes (docs/decisions.md#paged-listing): 304 before any row is read when the
     * client's copy is current; `Link` to the next page while there is one.
     */
    async browseBikes(ctx, { query }) {
      const { sort = 'created', limit = DEFAULT_PAGE, cursor, ...filters } = query;
      const after = cursor === undefined ? undefined : pages.open(cursor, sort, filters);
      if (cursor !== undefined && after === undefined) throw new HttpError(400, invalidFieldHeader('query.cursor'));
      const request = { sort, filters, after, limit };
      const tagOf = (version: string[]) => tags.list(...version, JSON.stringify(request));
      const conditional = ctx.req.headers['if-none-match'] !== undefined;
      const page = await reader(ctx).page(request, conditional ? (version) => isFresh(ctx, tagOf(version)) : undefined);
      if (page.version) setValidators(ctx, tagOf(page.version));
      ctx.set('Catalog-Cursor', feed.seal(pointOfSnapshot(page.seen.snapshot), page.seen));
      if (page.current) {
        ctx.status = 304;
        return;
      }
      if (page.next) {
        const next = new URLSearchParams(ctx.querystring);
        next.set('cursor', pages.seal(sort, filters, page.next));
        ctx.set('Link', `<${ctx.path}?${next}>; rel="next"`);
      }
      ctx.type = 'application/json';
      ctx.body = bikesJson(page.bikes);
    },

    async listBikes(ctx) {
      await sendList(ctx);
    },

    async searchBikesByTitle(ctx, { query }) {
      await sendList(ctx, query.query ?? '');
    },

    /**
     * The changes after the point `since` names (docs/decisions.md#the-change-feed), read where
     * the reads go; a cursor of another history of the catalog, or before what the log keeps, is
     * 410; none while a capture trigger is off (503: the log may lack changes). To a client that
     * asks for `text/event-stream`, a stream of them as they commit, resumed after Last-Event-ID
     * when it sends one (docs/decisions.md#live-updates).
     */
    async bikeChanges(ctx, { query, headers }) {
      const since = openCursor(query.since, 'query.since');
      if (wantsEventStream(ctx)) {
        return streams.serve(ctx, openCursor(headers['last-event-id'], 'headers.last-event-id') ?? since);
      }
      const from = since?.point ?? START;
      const { changes, state } = await changesAfter(reader(ctx).reads.query, from, query.limit ?? DEFAULT_CHANGES_PAGE);
      const refused = refusal(since, state);
      if (refused !== undefined) throw new HttpError(refused);
      ctx.set('Catalog-Cursor', feed.seal(pointAfterAll(from, changes, state), state));
      ctx.set('Cache-Control', 'no-store');
      ctx.type = 'application/json';
      ctx.body = `[${changes.map((change) => changeJson(change, feed.seal(change.point, state))).join(',')}]`;
    },

    async getBikeByHandle(ctx) {
      sendBike(ctx, (await reader(ctx).findFirstByHandle(ctx.params.handle)) ?? notFound());
    },

    async getBike(ctx, _input, { id }) {
      sendBike(ctx, (await reader(ctx).findById(id)) ?? notFound());
    },

    async createBike(ctx, { body, headers }) {
      const create = { id: randomUUID(), handle: deriveHandle(body.title), fields: body };
      const path = `/bikes/${create.id}`;
      const key = headers['idempotency-key'];
      if (key === undefined) {
        return sendWritten(ctx, await writing(path, onPrimary.create(create.id, create.handle, create.fields)));
      }
      // The fields as checked (unknown ones dropped), in the schema's order.
      const request = {
        client: scopeOf(callerOf(ctx)),
        key,
        fingerprint: createHash('sha256').update(JSON.stringify(body)).digest('base64url'),
        response: bikeJson({ id: create.id, handle: create.handle, ...create.fields }),
      };
      const outcome = await writing(path, onPrimary.createOnce(request, create));
      switch (outcome.kind) {
        case 'created':
          return sendWritten(ctx, outcome.stored);
        case 'replay':
          ctx.set('Idempotent-Replayed', 'true');
          ctx.set('ETag', tags.bike(outcome.state));
          ctx.type = 'application/json';
          ctx.body = outcome.response;
          return;
        case 'mismatch':
          throw new HttpError(422);
        case 'in-flight':
          throw new HttpError(409, { 'Retry-After': '1' });
      }
    },

    async replaceBike(ctx, { body }, { id, conditions }) {
      const { id: _ignored, handle, ...fields } = body;
      sendWritten(ctx, await writing(`/bikes/${id}`, onPrimary.replace(id, handle, fields, conditions)));
    },

    async updateBike(ctx, { body }, { id, conditions }) {
      sendWritten(ctx, (await writing(`/bikes/${id}`, onPrimary.patch(id, body, conditions))) ?? notFound());
    },

    async deleteBike(ctx, _input, { id, conditions }) {
      const deleted = await writing(`/bikes/${id}`, onPrimary.delete(id, conditions));
      if (deleted === PRECONDITION_FAILED) throw new HttpError(412);
      if (!deleted) notFound();
      ctx.body = { id };
    },
  } satisfies Partial<Handlers<typeof API_ROUTES>>;
}

function notFound(): never {
  throw new HttpError(404);
}
