import { createHash } from 'node:crypto';
import * as yup from 'yup';
import { check } from '../bikes/yup';
import { type FeedPoint, isFollowable, type Position } from '../feed/changes';
import type { Cursors } from './cursors';

/**
 * The change feed's cursors (docs/decisions.md#cursors): a point in the feed, with the catalog's
 * identity, the state of the triggers that capture changes and how far pruning had looked when it
 * was made. A cursor of another history of the catalog (another identity, or made before a capture
 * trigger was switched off and on), or one pruning has passed since, cannot be followed: the log
 * may lack changes it needs (410, relist).
 */

const digits = yup.string().strict().defined().matches(/^-?\d{1,19}$/);

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

/** The triggers' state, short: what a cursor remembers of it. */
export const triggersMark = (triggers: string) => createHash('sha1').update(triggers).digest('base64url').slice(0, 12);

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

export function feedCursors(cursors: Cursors, identity: () => string) {
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
      const point = s === undefined ? { position } : { position, snapshot: s };
      return {
        point,
        isCurrent: (log) =>
          i === identity() && t === triggersMark(log.triggers) && isFollowable(point, positionOf(h), log.horizon),
      };
    },
  };
}

export type FeedCursors = ReturnType<typeof feedCursors>;
