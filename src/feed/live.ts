import type { Query } from '../db/pool';
import {
  type Change,
  changesAfter,
  type FeedPoint,
  isBefore,
  type LogState,
  pointAfterPage,
  type Position,
} from './changes';

/**
 * The live feed (docs/reference/browse-and-sync.md#one-poll-per-instance): every change, as it commits on any
 * instance, to every follower of this one, from one shared poll of the change log rather than a
 * query loop per follower. The log is the only source: a write made through another instance is in
 * it like one made here.
 *
 * A follower starts where it says (a cursor) and catches up on its own, a page at a time, until it
 * stands at or past the poll's head, where it joins the poll. The feed is one sequence, in the
 * order of (txid, change_id), and nothing ever appears at or before a point the log has completed
 * (changes.ts). Every follower that has joined has every change up to the head; the poll's next
 * page goes on from the head, and a follower takes from it only the changes after its own
 * point: none is missed at the hand-over, none given twice.
 */

/**
 * How often the shared poll reads the log while anyone follows: the most a change waits for it.
 * @public bench/live.js requires it from dist/.
 */
export const POLL_MS = 100;

/** Changes one read gives at most, to a follower catching up or to the shared poll. */
const PAGE = 1000;

/** A page of the feed, as a follower gets it. */
export interface Page {
  changes: Change[];
  /** The log's state, read with the changes. */
  state: LogState;
  /** Where its reader stands once it has the page. */
  next: FeedPoint;
  /** The page was full: more may follow at once. */
  full: boolean;
}

/** One who follows the feed: a stream of this instance's (following.ts). */
export interface Follower {
  /** Once true, the follower takes nothing more (its client left, or it ended): the feed forgets it. */
  readonly ended: boolean;
  /**
   * The changes after those it has, oldest first, with the log's state they were read with. None,
   * when only the state is news: the shared poll tells every follower every state it reads.
   */
  receive(changes: Change[], state: LogState): void;
  /** Settles once it can take another page (a client that reads slowly has taken what it was sent). */
  drained(): Promise<void>;
  /** The feed is closing (the service stops): nothing more will come. */
  closing(): void;
}

interface Entry {
  follower: Follower;
  /** Every change at or before this point has been given to the follower. */
  point: FeedPoint;
  /** It has joined the shared poll. */
  live: boolean;
}

export interface LiveFeedOptions {
  pollMs?: number;
  /** A read of the log that failed, the first after one that succeeded: each is tried again at the next poll. */
  onError: (err: unknown) => void;
}

export function liveFeed(query: Query, { pollMs = POLL_MS, onError }: LiveFeedOptions) {
  const entries = new Set<Entry>();
  /** Every follower that has joined the poll has every change at or before it; unset while no one follows. */
  let head: Position | undefined;
  let timer: NodeJS.Timeout | undefined;
  let polling: Promise<void> | undefined;
  let closed = false;
  /** Followers waiting for the poll's next read, which they need to stand at its head. */
  let waiting: (() => void)[] = [];
  let failing = false;

  async function read(from: FeedPoint): Promise<Page> {
    const { changes, state } = await changesAfter(query, from, PAGE);
    failing = false;
    return { changes, state, next: pointAfterPage(from, changes, PAGE, state), full: changes.length === PAGE };
  }

  function report(err: unknown): void {
    if (!failing) onError(err);
    failing = true;
  }

  const nextPoll = () => new Promise<void>((resolve) => waiting.push(resolve));

  function wake(): void {
    const woken = waiting;
    waiting = [];
    for (const resolve of woken) resolve();
  }

  /**
   * A follower that has every change up to its point joins the poll once it stands at or past the
   * head, its point no list's snapshot (the poll reads without one; a follower from a list's
   * cursor reads on its own until every transaction the list could not see has ended). The first
   * to get there while no one polls sets the head.
   */
  function joins(entry: Entry): boolean {
    if (entry.point.snapshot !== undefined) return false;
    head ??= entry.point.position;
    if (isBefore(entry.point.position, head)) return false;
    entry.live = true;
    return true;
  }

  /** Pages from the follower's point until it joins the poll; a read that fails is tried again after the poll's next. */
  async function catchUp(entry: Entry, full: boolean): Promise<void> {
    while (!entry.follower.ended && !closed) {
      if (full) await entry.follower.drained();
      else if (joins(entry)) return;
      else await nextPoll();
      if (entry.follower.ended || closed) return;
      let page: Page;
      try {
        page = await read(entry.point);
      } catch (err) {
        if (!entry.follower.ended && !closed) report(err);
        full = false;
        continue;
      }
      if (entry.follower.ended || closed) return;
      entry.point = page.next;
      full = page.full;
      entry.follower.receive(page.changes, page.state);
    }
  }

  /** The page to a follower that has joined: what comes after its point, and the state. */
  function deliver(entry: Entry, page: Page, upTo: Position): void {
    const after = entry.point.position;
    const from = page.changes.findIndex((change) => isBefore(after, change.point.position));
    // The page itself (one array for every follower: it is sealed once, following.ts),
    // unless the follower joined past the page's start.
    const changes = from === 0 ? page.changes : from < 0 ? [] : page.changes.slice(from);
    if (isBefore(after, upTo)) entry.point = { position: upTo };
    entry.follower.receive(changes, page.state);
  }

  /** Reads from the head, page after page while they are full, and gives each to every follower that has joined. */
  async function poll(): Promise<void> {
    while (head !== undefined && !closed) {
      let page: Page;
      try {
        page = await read({ position: head });
      } catch (err) {
        report(err);
        break;
      }
      head = page.next.position;
      for (const entry of entries) if (entry.live && !entry.follower.ended) deliver(entry, page, head);
      if (!page.full) break;
    }
    wake();
  }

  function tick(): void {
    for (const entry of entries) if (entry.follower.ended) entries.delete(entry);
    if (polling) return;
    if (entries.size === 0) {
      // No one follows: no poll, and a head that would be stale when someone comes.
      clearInterval(timer);
      timer = undefined;
      head = undefined;
      return;
    }
    polling = poll()
      .catch(onError)
      .finally(() => (polling = undefined));
  }

  return {
    /** The page after `from`, read now: how a follower starts (its answer checked before its stream begins). */
    read,

    /** Gives `follower` the `first` page, then every change after it, as they commit, until it ends. */
    follow(first: Page, follower: Follower): void {
      if (closed) return follower.closing();
      follower.receive(first.changes, first.state);
      const entry: Entry = { follower, point: first.next, live: false };
      entries.add(entry);
      timer ??= setInterval(tick, pollMs).unref();
      catchUp(entry, first.full).catch(onError);
    },

    /** Ends every follower (closing) and the poll; a follower that comes after is ended at once. */
    async close(): Promise<void> {
      closed = true;
      clearInterval(timer);
      for (const entry of entries) if (!entry.follower.ended) entry.follower.closing();
      entries.clear();
      wake();
      await polling;
    },
  };
}

export type LiveFeed = ReturnType<typeof liveFeed>;
