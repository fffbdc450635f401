import { randomInt } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type Koa from 'koa';
import { type Change, type LogState, START } from '../feed/changes';
import type { Follower, LiveFeed, Page } from '../feed/live';
import { eventStreams } from '../metrics';
import { changeJson } from './bike-json';
import { HttpError } from './errors';
import { type FeedCursors, type OpenedCursor, refusal } from './feed-cursor';
import type { AbuseLimits } from './limits';

/**
 * GET /bikes/changes as Server-Sent Events (docs/decisions.md#live-updates): the changes the live
 * feed gives (src/feed/live.ts), each an event whose `id` is its cursor and whose data is the
 * change as a page of the feed gives it; a comment now and then so that proxies keep the stream;
 * a `retry:` hint at its start and at its end.
 */

const EVENT_STREAM = 'text/event-stream';

/** A comment this often, so that proxies and the listener's idle cut-off (60 s) see the stream alive. */
export const HEARTBEAT_MS = 15_000;

/** A client reconnects 1 to 3 s after its stream ends: spread, so that a stopping instance's clients do not all come back at once. */
const RETRY_MS = 1_000;
const RETRY_SPREAD_MS = 2_000;

/**
 * A client that has this much sent to it and not taken is cut: it reconnects from its last event
 * and catches up a page at a time, instead of this instance holding what it does not read.
 */
const MAX_UNTAKEN_BYTES = 1024 * 1024;

const retryHint = () => `retry: ${RETRY_MS + randomInt(RETRY_SPREAD_MS)}\n`;

/** The client asks for the stream: it prefers `text/event-stream` to JSON (an EventSource sends only that). */
export function wantsEventStream(ctx: Koa.Context): boolean {
  return ctx.accepts('application/json', EVENT_STREAM) === EVENT_STREAM;
}

/** Settles once the response can take more, or is gone. */
function drained(res: ServerResponse): Promise<void> {
  if (!res.writableNeedDrain) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

export interface EventStreamSettings {
  /** MAX_EVENT_STREAMS: streams open at once on this instance, every client's together (503 over it). */
  maxStreams: number;
  heartbeatMs: number;
}

export function changeStreams(
  live: LiveFeed,
  feed: FeedCursors,
  limits: AbuseLimits,
  { maxStreams, heartbeatMs }: EventStreamSettings,
) {
  /** Streams admitted, from their checks to their end. */
  let admitted = 0;
  /** The events of a page, made once for every stream it goes to (the shared poll gives each the same array). */
  const eventsOf = new WeakMap<Change[], string>();

  function events(changes: Change[], state: LogState): string {
    let text = eventsOf.get(changes);
    if (text === undefined) {
      text = changes
        .map((change) => {
          const cursor = feed.seal(change.point, state);
          return `id: ${cursor}\ndata: ${changeJson(change, cursor)}\n\n`;
        })
        .join('');
      eventsOf.set(changes, text);
    }
    return text;
  }

  /**
   * The stream itself, written to the response as each event comes: not through Koa's body, so that
   * nothing in between (a compressor) holds an event back, and what a client has not taken is the
   * response's own buffer, bounded (MAX_UNTAKEN_BYTES).
   */
  function stream(res: ServerResponse, from: OpenedCursor, first: Page): void {
    /** Where the stream stands: what the next state read is checked against. */
    let cursor = from;
    let ended = false;
    const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), heartbeatMs);
    eventStreams.inc();
    const finish = (): boolean => {
      if (ended) return false;
      ended = true;
      clearInterval(heartbeat);
      eventStreams.dec();
      return true;
    };
    /** Ends the stream with a comment saying why, and when to reconnect. */
    const end = (why: string) => {
      if (finish()) res.end(`: ${why}\n${retryHint()}\n`);
    };
    res.once('close', finish);

    const follower: Follower = {
      get ended() {
        return ended;
      },
      receive(changes, state) {
        // A capture trigger switched off, or off and on, a restore, another catalog: the client
        // reconnects from its last event and is told (503, 410), never given a stream with a gap.
        if (refusal(cursor, state) !== undefined) return end('the change log cannot be followed from here');
        if (changes.length === 0) return;
        res.write(events(changes, state));
        cursor = feed.current(changes[changes.length - 1].point, state);
        if (res.writableLength > MAX_UNTAKEN_BYTES && finish()) res.destroy();
      },
      drained: () => drained(res),
      closing: () => end('the server is shutting down'),
    };
    res.write(`${retryHint()}\n`);
    live.follow(first, follower);
  }

  return {
    /**
     * Answers the request with a stream from `opened` (Last-Event-ID, else `since`; neither: the
     * start), after the checks a page has (503 while a capture trigger is off, 410 for a cursor
     * that cannot go on), made on a first page read before the status is sent. First this client's
     * streams (429), then this instance's (503). HEAD answers as GET would, without a stream.
     */
    async serve(ctx: Koa.Context, opened: OpenedCursor | undefined): Promise<void> {
      await limits.check(ctx, 'eventStreams');
      if (admitted >= maxStreams) throw new HttpError(503);
      admitted++;
      ctx.res.once('close', () => admitted--);
      const first = await live.read(opened?.point ?? START);
      const refused = refusal(opened, first.state);
      if (refused !== undefined) throw new HttpError(refused);
      ctx.status = 200;
      ctx.type = EVENT_STREAM;
      ctx.set({ 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' });
      if (ctx.method === 'HEAD') return;
      ctx.respond = false;
      stream(ctx.res, opened ?? feed.current(START, first.state), first);
    },
  };
}

export type ChangeStreams = ReturnType<typeof changeStreams>;
