import type Koa from 'koa';
import * as yup from 'yup';
import type { OpenedCursor, SealedChange } from '../feed/following';
import { HttpError } from '../http/errors';
import { wantsEventStream } from '../http/event-stream';
import { invalidFieldHeader } from '../http/invalid-field';
import { cursor, inputOf, pageSize } from '../http/schema';
import { changeJson, EXAMPLE_BIKE, ref } from './bike-json';
import { type Api, operation } from './operation';

/**
 * GET /bikes/changes: the change feed (docs/reference/browse-and-sync.md#the-change-feed), a page at a time, or as
 * Server-Sent Events as the changes commit (docs/reference/browse-and-sync.md#live-updates). What the feed gives,
 * and when it cannot go on, is src/feed/following.ts; the stream's framing is src/http/event-stream.ts.
 */

/** The most changes one page gives, and how many when the client does not say. */
const MAX_CHANGES_PAGE = 1000;
const DEFAULT_CHANGES_PAGE = 100;

/** Where to go on from, and how many at most (a page; a stream gives every change). */
const changesQuery = yup.object({ since: cursor(), limit: pageSize(MAX_CHANGES_PAGE) });

/** The cursor a client sent as `field`, opened; 400 naming the field when it is not one of ours. */
function openCursor({ feed }: Api, cursor: string | undefined, field: string): OpenedCursor | undefined {
  if (cursor === undefined) return undefined;
  const opened = feed.open(cursor);
  if (opened === undefined) throw new HttpError(400, invalidFieldHeader(field));
  return opened;
}

/** The events of a page of changes, made once for every stream it goes to (the feed gives each the same array). */
const eventsOf = new WeakMap<readonly SealedChange[], string>();
function events(changes: readonly SealedChange[]): string {
  let text = eventsOf.get(changes);
  if (text === undefined) {
    text = changes.map(({ change, cursor }) => `id: ${cursor}\ndata: ${changeJson(change, cursor)}\n\n`).join('');
    eventsOf.set(changes, text);
  }
  return text;
}

/**
 * Answers with a stream of the changes from `since` (none: the start), once this client's streams
 * (429) and this instance's (503) allow one more and the feed can be followed from there (503, 410).
 */
async function serveStream(ctx: Koa.Context, { feed, streams }: Api, since: OpenedCursor | undefined): Promise<void> {
  await streams.admit(ctx);
  const stream = await feed.stream(since);
  if ('refused' in stream) throw new HttpError(stream.refused);
  const sink = streams.open(ctx);
  if (sink === undefined) return;
  stream.follow({
    get ended() {
      return sink.ended;
    },
    receive: (changes) => sink.send(events(changes)),
    lost: () => sink.end('the change log cannot be followed from here'),
    drained: () => sink.drained(),
    closing: () => sink.end('the server is shutting down'),
  });
}

const EXAMPLE_CURSOR = 'eyJrIjoiZmVlZCIsImkiOiJBQkNEIiwidCI6IkVGR0giLCJwIjpbIjc0MiIsIjEzIl19.c2lnbmF0dXJlLW9mLWl0';
const EXAMPLE_CHANGE = { cursor: EXAMPLE_CURSOR, type: 'upsert', id: EXAMPLE_BIKE.id, bike: EXAMPLE_BIKE };
const EXAMPLE_EVENTS = `retry: 2417\n\nid: ${EXAMPLE_CURSOR}\ndata: ${JSON.stringify(EXAMPLE_CHANGE)}\n\n: keep-alive\n\n`;

export const bikeChanges = operation({
  method: 'get',
  path: '/bikes/changes',
  summary: 'Follow the changes to the catalog',
  description:
    'The changes after a cursor, oldest first: each an `upsert` (the whole bike as it is after it) or a ' +
    "`delete` (its id), with the cursor to go on from. Pass the last one's `cursor` as `since` for the next " +
    'page; `[]` means caught up. Without `since`, from the oldest change kept. Every list answers with ' +
    '`Catalog-Cursor`, the point its rows are consistent with: follow from it and nothing is missed or repeated. ' +
    "A bike's changes come in the order they were committed, and a change comes only once no transaction that " +
    'could still write one before it is running. A cursor older than what is kept, or of another history of the ' +
    'catalog (a restore), is 410: list again. With `Accept: text/event-stream` (an EventSource), the same ' +
    'changes as Server-Sent Events, as they commit, through any instance.',
  input: inputOf({ query: changesQuery, headers: yup.object({ 'last-event-id': cursor() }) }),
  invalid: 400,
  validators: false,
  queryParameters: {
    since: {
      description: 'A cursor from a change or a Catalog-Cursor header. Absent: from the start.',
      example: EXAMPLE_CURSOR,
    },
    limit: {
      description: `The most changes a page gives, 1 to ${MAX_CHANGES_PAGE}; ${DEFAULT_CHANGES_PAGE} when absent. A stream gives them all.`,
      example: DEFAULT_CHANGES_PAGE,
    },
  },
  responseHeaders: ['Catalog-Cursor'],
  alsoAnswers: [410],
  eventStream: {
    description:
      'Each change as an event once it has committed (on any instance): `id` its cursor, `data` the change as ' +
      'a page gives it. An EventSource resumes after the last event it got (Last-Event-ID). A comment every ' +
      '15 s keeps proxies from closing the stream; a `retry:` line says when to reconnect, at its start and ' +
      'when the server ends it (shutting down, or the log no longer followable from it: reconnecting then ' +
      'gives 503 or 410).',
    example: EXAMPLE_EVENTS,
  },
  ok: {
    description: 'The changes, oldest first',
    schema: { type: 'array', items: ref('Change') },
    example: [EXAMPLE_CHANGE],
  },
  meanings: {
    400:
      '`since` or `Last-Event-ID` is not a cursor of this service (tampered, or of a sort of page), or `limit` is ' +
      'not 1 to 1000.',
    410: 'The cursor is older than the changes kept, or of another history of the catalog: list again.',
    429: 'This client has as many event streams open on this instance as it may; retry after Retry-After seconds.',
    503:
      'The database is not answering, or a capture trigger is off (the log may lack changes), or this instance ' +
      'has as many event streams open as it takes; retry after Retry-After seconds.',
  },
  /**
   * The changes after the point `since` names, read where the reads go; to a client that asks for
   * `text/event-stream`, a stream of them as they commit, resumed after Last-Event-ID when it
   * sends one.
   */
  async handle(ctx, { query, headers }, _request, api) {
    const since = openCursor(api, query.since, 'query.since');
    if (wantsEventStream(ctx)) {
      return serveStream(ctx, api, openCursor(api, headers['last-event-id'], 'headers.last-event-id') ?? since);
    }
    const page = await api.feed.page(api.reader(ctx).reads.query, since, query.limit ?? DEFAULT_CHANGES_PAGE);
    if ('refused' in page) throw new HttpError(page.refused);
    ctx.set('Catalog-Cursor', page.cursor);
    ctx.set('Cache-Control', 'no-store');
    ctx.type = 'application/json';
    ctx.body = `[${page.changes.map(({ change, cursor }) => changeJson(change, cursor)).join(',')}]`;
  },
});
