import { createHash } from 'node:crypto';
import * as yup from 'yup';
import { check } from './schema';
import { type FeedPoint, isFollowable, type LogState, type Position } from '../feed/changes';
import type { Cursors } from './cursors';

/**
 * The change feed's cursors (docs/decisions.md#cursors): a point in the feed, with the catalog's
 * identity, the state of the triggers that capture changes and how far pruning had looked when it
 * was made. A cursor of another history of the catalog (another identity, or made before a capture
 * trigger was switched off and on), or one pruning has passed since, cannot be followed: the log
 * may lack changes it needs (410, relist).
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

/** The last state marked, and its mark: every event stream checks every state the live feed reads (live.ts). */
let marked = { triggers: '', mark: markOf('') };

/** The triggers' state, short: what a cursor remembers of it. */
function triggersMark(triggers: string): string {
  if (marked.triggers !== triggers) marked = { triggers, mark: markOf(triggers) };
  return marked.mark;
}

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
 * Why the feed cannot go on from `cursor` (none: from the start) with the log in `state`
 * (docs/decisions.md#the-change-feed): 503 while a capture trigger is off, as the log may lack
 * changes; 410 for a cursor that cannot be followed (another history of the catalog, the capture
 * switched off and on since, pruning passed it). Undefined when it can.
 */
export function refusal(cursor: OpenedCursor | undefined, state: LogState): 503 | 410 | undefined {
  if (!state.counting) return 503;
  if (cursor && !cursor.isCurrent(state)) return 410;
  return undefined;
}

export function feedCursors(cursors: Cursors, identity: () => string) {
  /** A cursor of `point`, made in the catalog `made`, with the capture marked `triggers` and pruning at `horizon`. */
  const opened = (point: FeedPoint, made: string, triggers: string, horizon: Position): OpenedCursor => ({
    point,
    isCurrent: (log) =>
      made === identity() && triggers === triggersMark(log.triggers) && isFollowable(point, horizon, log.horizon),
  });

  return {
    seal(point: FeedPoint, log: LogMarks): string {
      return cursors.seal({
        k: 'feed',
        i: identity(),
        t: triggersMark(log.triggers),
        h: [log.horizon.txid, log.horizon.changeId],
        p: [point.position.txid, point.position.changeId],
        ...(point.snapshot !== undefined && { s: point.snapshot }),
      });
    },
    /** The cursor's point, or undefined for a string that is not a cursor of ours (tampered, made up). */
    open(cursor: string): OpenedCursor | undefined {
      const checked = check(payload, cursors.open(cursor));
      if (!checked.valid) return undefined;
      const { i, t, h, p, s } = checked.value;
      const position = positionOf(p);
      return opened(s === undefined ? { position } : { position, snapshot: s }, i, t, positionOf(h));
    },
    /** The cursor of `point` as seal() would make it now and open() give it back: what a stream goes on from. */
    current(point: FeedPoint, log: LogMarks): OpenedCursor {
      return opened(point, identity(), triggersMark(log.triggers), log.horizon);
    },
  };
}

export type FeedCursors = ReturnType<typeof feedCursors>;
