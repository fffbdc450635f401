/**
 * The watch on a database server as named states, and the one rule that moves between them
 * (`next`): what one question to the server found, judged against what the pool's own queries
 * did meanwhile (docs/reference/requests-and-answers.md#a-database-that-is-busy-down-or-hung). Pure: the pool
 * (src/db/pool.ts, watchServer) asks, observes, and carries out what `next` decides.
 */

/** A server that leaves a trivial query unanswered this long, while the pool makes no progress, hangs. */
export const HANG_AFTER_MS = 1_000;

/**
 * How long a request may wait for one of the pool's connections while the server answers: a busy
 * service queues, it does not fail (docs/reference/requests-and-answers.md#busy-is-not-down). A connection for the
 * question not made in that time, while the pool makes no progress, means the server hangs.
 */
export const CONNECTION_WAIT_MS = 10_000;

/**
 * - `up`: the last question was answered.
 * - `busy`: a question went unanswered, but the pool's queries complete: a loaded machine, not a
 *   hung one; requests are served and wait as usual.
 * - `slow-to-connect`: the question's connection is slow to be made while a query of the pool runs
 *   without completing: new requests fail at once, the pool's connections are left alone (on a
 *   busy machine making one can take seconds).
 * - `hung`: a question unanswered, or a connection not made in the time the pool waits for one,
 *   while none of the pool's queries completed either (a stopped server or pooler): new requests
 *   fail at once, and the pool's connections were closed, so what ran on them fails then.
 * - `down`: the server refused the question's connection, or broke it before it answered: new
 *   requests fail at once, and the pool's connections were closed (what waits on them through a
 *   pooler whose server is gone would wait for the cut-off).
 */
export type ServerState =
  | { name: 'up' }
  | { name: 'busy' }
  | { name: 'slow-to-connect'; reason: string }
  | { name: 'hung'; reason: string }
  | { name: 'down'; reason: string };

/** The states in which new requests fail at once (503). */
export type Failing = Extract<ServerState, { reason: string }>;

export const failing = (state: ServerState): state is Failing => 'reason' in state;

/** Where the question's connection stood. */
type ProbeConnection =
  /** Made before this question was asked. */
  | { made: 'before' }
  /** Made while the question waited (its answer did not come in time). */
  | { made: 'meanwhile' }
  /** Still being made, for this long; `poolConnected`: the pool made one of its own since it began. */
  | { made: 'not yet'; forMs: number; poolConnected: boolean };

/**
 * What one question to the server (a `SELECT 1`, on its connection of its own) found, and what the
 * pool's queries did while it waited. A query completed is one the server answered: a result, or an
 * error the server reported; one cut off, or failed by a pooler that cannot reach its server, is not.
 */
export type Observation =
  | { answer: 'yes' }
  | {
      /** Its connection was refused, or broke; `message` says how. */
      answer: 'failed';
      connection: 'made before' | 'not made before';
      message: string;
      /** A query of the pool completed while the question waited. */
      poolProgressed: boolean;
    }
  | {
      answer: 'none';
      connection: ProbeConnection;
      /** A query of the pool completed while the question waited. */
      poolProgressed: boolean;
      /** A query of the pool completed while the question's connection was being made. */
      poolProgressedWhileConnecting: boolean;
      /** A query of the pool ran all the while the question waited, without completing. */
      poolQueryStuck: boolean;
    };

/**
 * What the pool does after a question, besides entering the new state:
 * - `new probe`: the question's connection is given up; the next question makes another.
 * - `ask again`: ask at once, not at the next tick (the answer said nothing of the server now).
 * - `close connections`: close every connection of the pool, so what runs on them fails now.
 */
type Action = 'new probe' | 'ask again' | 'close connections';

export interface Decision {
  state: ServerState;
  actions: Action[];
}

/**
 * The state after `state` when a question found `seen`. Each branch names the case the
 * comments of the watch reasoned through; a test drives each (test/db/server-watch.test.ts).
 */
export function next(state: ServerState, seen: Observation): Decision {
  if (seen.answer === 'yes') return { state: { name: 'up' }, actions: [] };

  if (seen.answer === 'failed') {
    // A connection that broke since it was made (the server ended it: an administrator, its
    // database dropped and made anew) says nothing of the server now: ask on a new one.
    if (seen.connection === 'made before') return { state, actions: ['new probe', 'ask again'] };
    // Refused, or broken before its first answer: down. Unless the pool's queries complete (a
    // server that is up but refuses more connections), its connections go too, once, as it goes
    // down: a query sent meanwhile through a pooler whose server is gone waits in the pooler's
    // queue (PgBouncer's, for its server_login_retry and more), and would wait for the cut-off.
    const goesDown = state.name !== 'down' && !seen.poolProgressed;
    return {
      state: { name: 'down', reason: `the database cannot be reached: ${seen.message}` },
      actions: goesDown ? ['new probe', 'close connections'] : ['new probe'],
    };
  }

  const { connection } = seen;
  if (connection.made === 'not yet' && connection.poolConnected) {
    // The pool made a connection while this one was still being made: it was begun where the
    // server no longer is (a port the embedded server left, now another's, who may never answer),
    // or stalled; it says nothing of the server now: ask on a new one.
    return { state, actions: ['new probe', 'ask again'] };
  }

  const notConnecting = connection.made === 'not yet' && connection.forMs >= CONNECTION_WAIT_MS;
  if (seen.poolProgressed || (notConnecting && seen.poolProgressedWhileConnecting)) {
    // The pool's queries complete: busy, not hung; what was judged before stands until an answer
    // comes. A connection that slow is made anew.
    return { state: failing(state) ? state : { name: 'busy' }, actions: notConnecting ? ['new probe'] : [] };
  }

  if (connection.made !== 'before' && !notConnecting) {
    // Its connection is slow to be made: down for new requests while a query of the pool ran all
    // the while without completing. (With none running, a service just started on a busy machine
    // would answer 503 to a database that is up.) But making one can take seconds on a busy
    // machine (at load 20 a second was not enough), so the pool's connections are left alone
    // until it has taken as long as the pool waits for one.
    if (!seen.poolQueryStuck || failing(state)) return { state, actions: [] };
    return {
      state: {
        name: 'slow-to-connect',
        reason: `the database did not take a connection within ${HANG_AFTER_MS / 1000} s`,
      },
      actions: [],
    };
  }

  // A question unanswered, or a connection not made, while none of the pool's queries completed
  // meanwhile either: it hangs, as a stopped server or pooler does.
  const reason =
    connection.made === 'before'
      ? `the database did not answer within ${HANG_AFTER_MS / 1000} s`
      : `the database did not take a connection within ${CONNECTION_WAIT_MS / 1000} s`;
  return { state: { name: 'hung', reason }, actions: ['close connections', 'new probe'] };
}
