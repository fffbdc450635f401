import type { CallOptions } from './bikes.ts';
import type { Context, EventSourceConstructor } from './context.ts';
import { CatalogError, refusal } from './errors.ts';
import { persist, sleep } from './retry.ts';
import type { CatalogEvent, Change } from './types.ts';

export interface FollowOptions extends CallOptions {
  /** Where to go on from: the `cursor` of the last event handled. Without it, the catalog is listed first. */
  from?: string;
  /** How long to wait between pages of changes once caught up, where there is no EventSource: 1 s. */
  pollMs?: number;
}

/** A page of the feed: at most this many changes. */
const PAGE = 1000;
/** How many of the latest changes' cursors are kept to drop a change met twice. */
const REMEMBERED = 1000;

/**
 * The catalog, then every change to it, each once and in order, handed to `onChange` one at a
 * time (an async `onChange` is awaited before the next). First the whole catalog as a `list`
 * (GET /bikes/all), unless `from` says where to go on from; then the feed from the list's
 * `Catalog-Cursor`: an event stream where there is an EventSource (browsers), otherwise pages of
 * GET /bikes/changes. Where the feed cannot go on (410: pruned past the cursor, or another
 * history of the catalog; or a cursor the service no longer opens), the catalog is listed again.
 * A service that does not answer is asked again, for as long as it takes. Resolves once `signal`
 * aborts; rejects with what `onChange` throws, or a refusal that asking again cannot change.
 */
export async function follow(
  ctx: Context,
  onChange: (event: CatalogEvent) => unknown,
  { from, signal, pollMs = 1000 }: FollowOptions = {},
): Promise<void> {
  // Every change comes once: a cursor met again (a reconnection that overlaps) is dropped.
  const recent = new Set<string>();
  const deliver = async (change: Change) => {
    if (recent.has(change.cursor)) return;
    recent.add(change.cursor);
    if (recent.size > REMEMBERED) recent.delete(recent.values().next().value as string);
    await onChange(change);
  };
  const feed: Feed = { ctx, deliver, signal, pollMs };
  let cursor = from;
  try {
    for (;;) {
      if (cursor === undefined) {
        const list = await listAll(ctx, signal);
        recent.clear();
        await onChange(list);
        cursor = list.cursor;
      }
      await (ctx.EventSource ? streamFrom(feed, cursor, ctx.EventSource) : pagesFrom(feed, cursor));
      // They return only where the feed cannot go on from where it stood.
      cursor = undefined;
    }
  } catch (err) {
    if (signal?.aborted) return;
    throw err;
  }
}

interface Feed {
  ctx: Context;
  deliver(change: Change): Promise<void>;
  signal: AbortSignal | undefined;
  pollMs: number;
}

/** GET /bikes/all, and the feed's point it is consistent with. */
async function listAll(ctx: Context, signal?: AbortSignal): Promise<CatalogEvent & { type: 'list' }> {
  const what = 'GET /bikes/all';
  const { answer } = await persist((bounded) => ctx.api.GET('/bikes/all', { signal: bounded }), {
    ...ctx.persistence(what, signal),
    attempts: Infinity,
  });
  if (!answer.data) throw refusal(what, answer.response);
  const cursor = answer.response.headers.get('Catalog-Cursor');
  if (cursor === null) throw new CatalogError(`${what} answered no Catalog-Cursor`, answer.response.status);
  return { type: 'list', bikes: answer.data, cursor };
}

/**
 * A page of the feed after `cursor`, delivered, and the cursor after it; or `gone` where the feed
 * cannot go on from `cursor`. An empty page moves the cursor to its `Catalog-Cursor`: where the
 * follower stands, which pruning does not pass while the follower keeps up.
 */
async function pageAfter(feed: Feed, cursor: string): Promise<{ gone: true } | { cursor: string; full: boolean }> {
  const what = 'GET /bikes/changes';
  const { answer } = await persist(
    (bounded) =>
      feed.ctx.api.GET('/bikes/changes', {
        params: { query: { since: cursor, limit: PAGE } },
        signal: bounded,
      }),
    { ...feed.ctx.persistence(what, feed.signal), attempts: Infinity },
  );
  const { response, data } = answer;
  const refusedCursor = response.status === 400 && response.headers.get('X-Invalid-Field') === 'since';
  if (response.status === 410 || refusedCursor) return { gone: true };
  if (!data) throw refusal(what, response);
  for (const change of data as Change[]) {
    await feed.deliver(change);
    cursor = change.cursor;
  }
  if (data.length === 0) cursor = response.headers.get('Catalog-Cursor') ?? cursor;
  return { cursor, full: data.length === PAGE };
}

/** Pages of the feed from `cursor`, for as long as it goes on. */
async function pagesFrom(feed: Feed, from: string): Promise<void> {
  let cursor = from;
  for (;;) {
    const page = await pageAfter(feed, cursor);
    if ('gone' in page) return;
    cursor = page.cursor;
    if (!page.full) await sleep(feed.pollMs, feed.signal);
  }
}

/**
 * The feed as an event stream from `cursor`, for as long as it goes on. The EventSource reconnects
 * by itself (with Last-Event-ID) while the service answers nothing; an answer that ends it (410,
 * 429, 503, ...) is not shown to it, so a page from its last event says what it was, and gives
 * what came meanwhile, before a stream opens again.
 */
async function streamFrom(feed: Feed, from: string, EventSource: EventSourceConstructor): Promise<void> {
  let cursor = from;
  for (;;) {
    const page = await pageAfter(feed, await stream(feed, cursor, EventSource));
    if ('gone' in page) return;
    cursor = page.cursor;
    // Not straight back to a stream that was refused (too many streams: 429).
    await sleep(feed.pollMs, feed.signal);
  }
}

/** One EventSource from `since`, its events delivered in order; the last one's cursor once it has closed. */
function stream(feed: Feed, since: string, EventSource: EventSourceConstructor): Promise<string> {
  const { ctx, deliver, signal } = feed;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const source = new EventSource(`${ctx.baseUrl}/bikes/changes?since=${encodeURIComponent(since)}`);
    let cursor = since;
    let delivered = Promise.resolve();
    let failed = false;
    const stop = (err: unknown) => {
      failed = true;
      source.close();
      signal?.removeEventListener('abort', aborted);
      reject(err);
    };
    const aborted = () => stop(signal?.reason);
    signal?.addEventListener('abort', aborted, { once: true });
    source.addEventListener('message', (event) => {
      let change: Change;
      try {
        change = JSON.parse(event.data) as Change;
      } catch (err) {
        return stop(err);
      }
      cursor = change.cursor;
      delivered = delivered.then(() => (failed ? undefined : deliver(change))).catch(stop);
    });
    source.addEventListener('error', () => {
      // CONNECTING: it reconnects by itself. CLOSED (2): an answer that ended it.
      if (source.readyState !== 2 || failed) return;
      signal?.removeEventListener('abort', aborted);
      void delivered.then(() => failed || resolve(cursor));
    });
  });
}
