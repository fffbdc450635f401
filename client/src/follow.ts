import type { CallOptions } from './bikes.ts';
import type { Context, EventSourceConstructor } from './context.ts';
import { CatalogError, refusal } from './errors.ts';
import { type Persistence, persist, sleep } from './retry.ts';
import type { CatalogEvent, Change } from './types.ts';

export interface FollowOptions extends CallOptions {
  /** Where to go on from: the `cursor` of the last event handled. Without it, the catalog is listed first. */
  from?: string;
  /** How long to wait between pages of changes once caught up, where there is no EventSource: 1 s. */
  pollMs?: number;
  /** Told each time where the follower stands changes (FollowStatus). */
  onStatus?: (status: FollowStatus) => void;
}

/**
 * Where a follower stands: `offline`, the service does not answer (or answers 5xx) and is asked
 * again; `catching-up`, it answers, and what came meanwhile is being handed over; `caught-up`,
 * every change up to the last the service had when asked is handed over, and each new one
 * follows as it comes.
 */
export type FollowStatus = 'offline' | 'catching-up' | 'caught-up';

/** A page of the feed: at most this many changes. */
const PAGE = 1000;
/** How many of the latest changes' cursors are kept to drop a change met twice. */
const REMEMBERED = 1000;
/**
 * Changes a stream may have brought and `onChange` not yet taken: past them the stream is closed,
 * and, once `onChange` has taken them, the feed is read by pages again, each when the one before
 * is taken. An EventSource cannot be paused, so a slow `onChange` holds at most this many.
 */
const QUEUED = PAGE;

/**
 * The catalog, then every change to it, each once and in order, handed to `onChange` one at a
 * time (an async `onChange` is awaited before the next). First the whole catalog as a `list`
 * (GET /bikes/all), unless `from` says where to go on from; then the feed from the list's
 * `Catalog-Cursor`: an event stream where there is an EventSource (browsers), otherwise pages of
 * GET /bikes/changes. Where the feed cannot go on (410: pruned past the cursor, or another
 * history of the catalog; or a cursor the service no longer opens), the catalog is listed again.
 * A service that does not answer is asked again, for as long as it takes (`onStatus`: `offline`).
 * Resolves once `signal` aborts; rejects with what `onChange` throws, or a refusal that asking
 * again cannot change.
 */
export async function follow(
  ctx: Context,
  onChange: (event: CatalogEvent) => unknown,
  { from, signal, pollMs = 1000, onStatus }: FollowOptions = {},
): Promise<void> {
  let status: FollowStatus | undefined;
  const report = (now: FollowStatus) => {
    if (now === status) return;
    status = now;
    onStatus?.(now);
  };
  // Every change comes once: a cursor met again (a reconnection that overlaps) is dropped.
  const recent = new Set<string>();
  const deliver = async (change: Change) => {
    if (recent.has(change.cursor)) return;
    recent.add(change.cursor);
    if (recent.size > REMEMBERED) recent.delete(recent.values().next().value as string);
    await onChange(change);
  };
  const feed: Feed = { ctx, deliver, signal, pollMs, report, status: () => status };
  let cursor = from;
  try {
    for (;;) {
      if (cursor === undefined) {
        const list = await listAll(feed);
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
  report(status: FollowStatus): void;
  status(): FollowStatus | undefined;
}

/** How follow's requests persist: for as long as it takes, `offline` meanwhile, `catching-up` once answered. */
function persistence(feed: Feed, what: string): Persistence {
  return {
    ...feed.ctx.persistence(what, feed.signal),
    attempts: Infinity,
    onUnsettled: () => feed.report('offline'),
  };
}

/** GET /bikes/all, and the feed's point it is consistent with. */
async function listAll(feed: Feed): Promise<CatalogEvent & { type: 'list' }> {
  const { ctx } = feed;
  const what = 'GET /bikes/all';
  const { answer } = await persist(
    (bounded) => ctx.api.GET('/bikes/all', { signal: bounded }),
    persistence(feed, what),
  );
  feed.report('catching-up');
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
    persistence(feed, what),
  );
  const { response, data } = answer;
  const refusedCursor = response.status === 400 && response.headers.get('X-Invalid-Field') === 'query.since';
  if (response.status === 410 || refusedCursor) return { gone: true };
  if (!data) throw refusal(what, response);
  const full = data.length === PAGE;
  // Caught up, a page that is not full is the next changes as they come, not a backlog.
  if (full || (data.length > 0 && feed.status() !== 'caught-up')) feed.report('catching-up');
  for (const change of data as Change[]) {
    await feed.deliver(change);
    cursor = change.cursor;
  }
  if (data.length === 0) cursor = response.headers.get('Catalog-Cursor') ?? cursor;
  if (!full) feed.report('caught-up');
  return { cursor, full };
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
 * The feed by pages until caught up, then as an event stream, for as long as it goes on. A stream
 * that fails (the service away: an EventSource would reconnect by itself, saying nothing; an
 * answer that ends it, 410, 429, 503, which it is not shown), or that brings more than `onChange`
 * takes (QUEUED), is closed, and pages from its last event say what it was, give what came
 * meanwhile, and catch up before a stream opens again.
 */
async function streamFrom(feed: Feed, from: string, EventSource: EventSourceConstructor): Promise<void> {
  let cursor = from;
  for (;;) {
    const page = await pageAfter(feed, cursor);
    if ('gone' in page) return;
    cursor = page.cursor;
    if (page.full) continue;
    const ended = await stream(feed, cursor, EventSource);
    // Not straight back to a stream that was refused (too many streams: 429).
    if (ended.failed) await sleep(feed.pollMs, feed.signal);
    cursor = ended.cursor;
  }
}

/**
 * One EventSource from `since`, its events delivered in order; once it has failed or brought
 * QUEUED changes not yet taken, closed, and the last one's cursor once `onChange` has taken it.
 */
function stream(
  feed: Feed,
  since: string,
  EventSource: EventSourceConstructor,
): Promise<{ cursor: string; failed: boolean }> {
  const { ctx, deliver, signal } = feed;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const source = new EventSource(`${ctx.baseUrl}/bikes/changes?since=${encodeURIComponent(since)}`);
    let cursor = since;
    let delivered = Promise.resolve();
    let queued = 0;
    let closed = false;
    let stopped = false;
    const close = () => {
      closed = true;
      source.close();
      signal?.removeEventListener('abort', aborted);
    };
    const stop = (err: unknown) => {
      stopped = true;
      if (!closed) close();
      reject(err);
    };
    const end = (unanswered: boolean) => {
      close();
      void delivered.then(() => stopped || resolve({ cursor, failed: unanswered }));
    };
    const aborted = () => stop(signal?.reason);
    signal?.addEventListener('abort', aborted, { once: true });
    source.addEventListener('message', (event) => {
      if (closed) return;
      let change: Change;
      try {
        change = JSON.parse(event.data) as Change;
      } catch (err) {
        return stop(err);
      }
      cursor = change.cursor;
      queued++;
      delivered = delivered
        .then(() => (stopped ? undefined : deliver(change)))
        .then(() => void queued--)
        .catch(stop);
      if (queued >= QUEUED) end(false);
    });
    // A stream that fails, however (CONNECTING: the EventSource would try again by itself; CLOSED:
    // an answer that ended it), is closed: pages say what it was, and whether the service answers.
    source.addEventListener('error', () => {
      if (!closed) end(true);
    });
  });
}
