import { randomInt } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type Koa from 'koa';
import { eventStreams as openStreams } from '../metrics';
import { HttpError } from './errors';
import type { AbuseLimits } from './limits';

/**
 * Server-Sent Events (docs/reference/browse-and-sync.md#live-updates), as HTTP carries them: a stream admitted
 * within the limits, events written to the response as they come, a comment now and then so that
 * proxies keep the stream, a `retry:` hint at its start and at its end, and a client that takes
 * too little cut. What the events say is the route's (src/api/changes.ts).
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

/** A stream being written to its client. */
export interface EventStream {
  /** It has ended (its client left, it was cut, or end() was called): nothing more is written. */
  readonly ended: boolean;
  /** Events, as their text; a client that has not taken MAX_UNTAKEN_BYTES of them is cut. */
  send(events: string): void;
  /** Ends the stream with a comment saying why, and when to reconnect. */
  end(why: string): void;
  /** Settles once the client has taken what it was sent. */
  drained(): Promise<void>;
}

/**
 * The stream itself, written to the response as each event comes: not through Koa's body, so that
 * nothing in between (a compressor) holds an event back, and what a client has not taken is the
 * response's own buffer, bounded (MAX_UNTAKEN_BYTES).
 */
function streamTo(res: ServerResponse, heartbeatMs: number): EventStream {
  let ended = false;
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), heartbeatMs);
  openStreams.inc();
  const finish = (): boolean => {
    if (ended) return false;
    ended = true;
    clearInterval(heartbeat);
    openStreams.dec();
    return true;
  };
  res.once('close', finish);
  res.write(`${retryHint()}\n`);
  return {
    get ended() {
      return ended;
    },
    send(events) {
      res.write(events);
      if (res.writableLength > MAX_UNTAKEN_BYTES && finish()) res.destroy();
    },
    end(why) {
      if (finish()) res.end(`: ${why}\n${retryHint()}\n`);
    },
    drained: () => drained(res),
  };
}

export function eventStreams(limits: AbuseLimits, { maxStreams, heartbeatMs }: EventStreamSettings) {
  /** Streams admitted, from their admission to their end. */
  let admitted = 0;
  return {
    /** A stream for this request, if this client's streams (429), then this instance's (503), allow one more. */
    async admit(ctx: Koa.Context): Promise<void> {
      await limits.check(ctx, 'eventStreams');
      if (admitted >= maxStreams) {
        const why = new Error(`this instance has its ${maxStreams} event streams open (MAX_EVENT_STREAMS)`);
        throw new HttpError(503, {}, { cause: why });
      }
      admitted++;
      ctx.res.once('close', () => admitted--);
    },
    /**
     * Answers the request with the stream's 200 and its headers, and gives the stream; a HEAD
     * answers as GET would, without one (undefined).
     */
    open(ctx: Koa.Context): EventStream | undefined {
      ctx.status = 200;
      ctx.type = EVENT_STREAM;
      ctx.set({ 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' });
      if (ctx.method === 'HEAD') return undefined;
      ctx.respond = false;
      return streamTo(ctx.res, heartbeatMs);
    },
  };
}

export type EventStreams = ReturnType<typeof eventStreams>;
