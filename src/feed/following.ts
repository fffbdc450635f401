import { createHash } from 'node:crypto';
import * as yup from 'yup';
import type { Seen } from '../bikes/catalog-version';
import type { Query } from '../db/pool';
import type { Cursors } from '../http/cursors';
import {
  type Change,
  changesAfter,
  type FeedPoint,
  isFollowable,
  type LogState,
  pointAfterAll,
  pointOfSnapshot,
  type Position,
  START,
} from './changes';
import type { LiveFeed, Page } from './live';

/**
 * Following the change feed (docs/reference/browse-and-sync.md#the-change-feed), its rules once for a page and
 * for a stream alike: open the client's cursor, read the log, refuse to go on where it cannot be
 * followed, and seal a cursor for every change and for where the reader then stands.
 *
 * A cursor (docs/reference/browse-and-sync.md#cursors) is a point in the feed, with the catalog's identity, the
 * state of the triggers that capture changes and how far pruning had looked when it was made. A
 * cursor of another history of the catalog (another identity, or made before a capture trigger
 * was switched off and on), or one pruning has passed since, cannot be followed: the log may lack
 * changes it needs (410, relist).
 */

const digits = yup
  .string()
  .strict()
  .defined()
  .matches(/^-?\d{1,19}$/);

const payload = yup
  .object({
    k: yup.string().strict().defined().oneOf(['feed']),
    i: yup.string().strict().defined(),
    t: yup.string().strict().defined(),
    h: yup.tuple([digits, digits]).strict().defined(),
    p: yup.tuple([digits, digits]).strict().defined(),
    s: yup
      .string()
      .strict()
      .matches(/^\d+:\d+:(\d+(,\d+)*)?$/),
  })
  .strict()
  .defined();

const markOf = (triggers: string) => createHash('sha1').update(triggers).digest('base64url').slice(0, 12);

/** What the log says of itself when a cursor is made or opened. */
export interface LogMarks {
  triggers: string;
  horizon: Position;
}

/** A cursor opened: its point, and whether it can be followed in the catalog as it is now. */
export interface OpenedCursor {
  point: FeedPoint;
  /**
   * Made in this history of the catalog (its identity), with the capture in `log`'s state, and not
   * passed by pruning since: otherwise the log may lack changes the cursor's follower needs.
   */
  isCurrent(log: LogMarks): boolean;
}

const positionOf = ([txid, changeId]: [string, string]): Position => ({ txid, changeId });

/**
 * Why the feed cannot go on from `cursor` (none: from the start) with the log in `state`: 503
 * while a capture trigger is off, as the log may lack changes; 410 for a cursor that cannot be
 * followed (another history of the catalog, the capture switched off and on since, pruning passed
 * it). Undefined when it can.
 */
function refusal(cursor: OpenedCursor | undefined, state: LogState): 503 | 410 | undefined {
  if (!state.counting) return 503;
  if (cursor && !cursor.isCurrent(state)) return 410;
  return undefined;
}

/** The feed cannot be followed from the cursor given: the status that says why. */
export interface Refused {
  refused: 503 | 410;
}

/** A change and the cursor that goes on after it. */
export interface SealedChange {
  change: Change;
  cursor: string;
}

/** A page of the feed: its changes, each with its cursor, and the cursor of where its reader then stands. */
export interface FeedPage {
  changes: SealedChange[];
  cursor: string;
}

/** One who follows a stream of the feed: this instance's answer to a client (src/api/changes.ts). */
export interface StreamReader {
  /** Once true, the reader takes nothing more (its client left, or it ended). */
  readonly ended: boolean;
  /** The changes after those it has, oldest first; the same array goes to every reader of a page. */
  receive(changes: readonly SealedChange[]): void;
  /** The log can no longer be followed from where the reader stands: it must end (a client back is told 503 or 410). */
  lost(): void;
  /** Settles once it can take another page. */
  drained(): Promise<void>;
  /** The service is stopping: nothing more will come. */
  closing(): void;
}

export function changeFeed(cursors: Cursors, identity: () => string, live: LiveFeed) {
  /** The last state marked, and its mark: every stream checks every state the live feed reads. */
  let marked = { triggers: '', mark: markOf('') };
  /** The triggers' state, short: what a cursor remembers of it. */
  const triggersMark = (triggers: string): string => {
    if (marked.triggers !== triggers) marked = { triggers, mark: markOf(triggers) };
    return marked.mark;
  };

  /** A cursor of `point`, made in the catalog `made`, with the capture marked `triggers` and pruning at `horizon`. */
  const opened = (point: FeedPoint, made: string, triggers: string, horizon: Position): OpenedCursor => ({
    point,
    isCurrent: (log) =>
      made === identity() && triggers === triggersMark(log.triggers) && isFollowable(point, horizon, log.horizon),
  });

  const seal = (point: FeedPoint, log: LogMarks): string =>
    cursors.seal({
      k: 'feed',
      i: identity(),
      t: triggersMark(log.triggers),
      h: [log.horizon.txid, log.horizon.changeId],
      p: [point.position.txid, point.position.changeId],
      ...(point.snapshot !== undefined && { s: point.snapshot }),
    });

  /** The cursor of `point` as seal() would make it now and open() give it back: what a stream goes on from. */
  const current = (point: FeedPoint, log: LogMarks): OpenedCursor =>
    opened(point, identity(), triggersMark(log.triggers), log.horizon);

  const sealed = (changes: readonly Change[], state: LogState): SealedChange[] =>
    changes.map((change) => ({ change, cursor: seal(change.point, state) }));

  /** The changes of a page of the live feed, sealed once for every stream it goes to (it gives each the same array). */
  const sealedPages = new WeakMap<readonly Change[], SealedChange[]>();
  function sealedPage(changes: readonly Change[], state: LogState): SealedChange[] {
    let page = sealedPages.get(changes);
    if (page === undefined) sealedPages.set(changes, (page = sealed(changes, state)));
    return page;
  }

  return {
    /** The client's cursor, opened; undefined for a string that is not a cursor of ours (tampered, made up). */
    open(cursor: string): OpenedCursor | undefined {
      const value = cursors.open(cursor);
      if (!payload.isValidSync(value)) return undefined;
      const { i, t, h, p, s } = value;
      const position = positionOf(p);
      return opened(s === undefined ? { position } : { position, snapshot: s }, i, t, positionOf(h));
    },

    /** The cursor a reader goes on from once it has every change up to `point`, as a page seals it: a webhook's (src/webhooks/). */
    cursorOf: seal,

    /** The cursor of a list's rows (its Catalog-Cursor): the feed goes on from what they saw. */
    listCursor(seen: Seen): string {
      return seal(pointOfSnapshot(seen.snapshot), seen);
    },

    /** Up to `limit` changes after `since` (none: from the start), read with `query`; or why not. */
    async page(query: Query, since: OpenedCursor | undefined, limit: number): Promise<Refused | FeedPage> {
      const from = since?.point ?? START;
      const { changes, state } = await changesAfter(query, from, limit);
      const refused = refusal(since, state);
      if (refused !== undefined) return { refused };
      return { changes: sealed(changes, state), cursor: seal(pointAfterAll(from, changes, state), state) };
    },

    /**
     * A stream of the feed from `since` (none: from the start), its first page read now, so that
     * a refusal is answered before anything is sent; `follow` then gives the reader every change,
     * as they commit, until it ends, or the log can no longer be followed from where it stands.
     */
    async stream(since: OpenedCursor | undefined): Promise<Refused | { follow(reader: StreamReader): void }> {
      const first: Page = await live.read(since?.point ?? START);
      const refused = refusal(since, first.state);
      if (refused !== undefined) return { refused };
      return {
        follow(reader) {
          /** Where the stream stands: what the next state read is checked against. */
          let cursor = since ?? current(START, first.state);
          live.follow(first, {
            get ended() {
              return reader.ended;
            },
            receive(changes, state) {
              // A capture trigger switched off, or off and on, a restore, another catalog: the
              // client reconnects from its last event and is told (503, 410), never given a gap.
              if (refusal(cursor, state) !== undefined) return reader.lost();
              if (changes.length === 0) return;
              reader.receive(sealedPage(changes, state));
              cursor = current(changes[changes.length - 1].point, state);
            },
            drained: () => reader.drained(),
            closing: () => reader.closing(),
          });
        },
      };
    },
  };
}

export type ChangeFeed = ReturnType<typeof changeFeed>;
