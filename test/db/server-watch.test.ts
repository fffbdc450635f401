import { CONNECTION_WAIT_MS, failing, next, type Observation, type ServerState } from '../../src/db/server-watch';

/**
 * The database watch's transitions (docs/reference/requests-and-answers.md#a-database-that-is-busy-down-or-hung), each
 * from what one question found, without a server: the pool (src/db/pool.ts) only observes and
 * carries out what `next` decides.
 */

type ProbeConnection = Extract<Observation, { answer: 'none' }>['connection'];

const up: ServerState = { name: 'up' };
const busy: ServerState = { name: 'busy' };
const down: ServerState = { name: 'down', reason: 'the database cannot be reached: connect ECONNREFUSED' };
const hung: ServerState = { name: 'hung', reason: 'the database did not answer within 1 s' };
const slow: ServerState = { name: 'slow-to-connect', reason: 'the database did not take a connection within 1 s' };

/** A question left unanswered for its second, on `connection`, the pool as `pool` says. */
function unanswered(
  connection: ProbeConnection,
  pool: Partial<
    Pick<
      Extract<Observation, { answer: 'none' }>,
      'poolProgressed' | 'poolProgressedWhileConnecting' | 'poolQueryStuck'
    >
  > = {},
): Observation {
  return {
    answer: 'none',
    connection,
    poolProgressed: false,
    poolProgressedWhileConnecting: false,
    poolQueryStuck: false,
    ...pool,
  };
}

const connecting = (forMs: number, poolConnected = false): ProbeConnection => ({
  made: 'not yet',
  forMs,
  poolConnected,
});

describe('the database watch, state by state', () => {
  describe('an answer', () => {
    it.each([up, busy, slow, hung, down])('ends %o: up, requests served again', (state) => {
      expect(next(state, { answer: 'yes' })).toEqual({ state: up, actions: [] });
    });
  });

  describe('a connection refused or broken before its first answer', () => {
    const refused: Observation = {
      answer: 'failed',
      connection: 'not made before',
      message: 'connect ECONNREFUSED 127.0.0.1:5432',
      poolProgressed: false,
    };

    it("is down, and closes the pool's connections as it goes down (a pooler's queue would hold what runs on them)", () => {
      expect(next(up, refused)).toEqual({
        state: { name: 'down', reason: 'the database cannot be reached: connect ECONNREFUSED 127.0.0.1:5432' },
        actions: ['new probe', 'close connections'],
      });
      expect(next(hung, refused).actions).toContain('close connections');
    });

    it("closes them once: while it stays down, the next refusals leave the pool's connections alone", () => {
      expect(next(down, refused)).toEqual({
        state: { name: 'down', reason: 'the database cannot be reached: connect ECONNREFUSED 127.0.0.1:5432' },
        actions: ['new probe'],
      });
    });

    it("is down for new requests, but leaves the pool's connections alone while its queries complete (a server that refuses more)", () => {
      const full = { ...refused, message: 'sorry, too many clients already', poolProgressed: true };
      expect(next(up, full)).toEqual({
        state: { name: 'down', reason: 'the database cannot be reached: sorry, too many clients already' },
        actions: ['new probe'],
      });
    });
  });

  describe('a connection that broke after it was made', () => {
    it('says nothing of the server now: the state stands, and the question is asked again at once on a new one', () => {
      const broken: Observation = {
        answer: 'failed',
        connection: 'made before',
        message: 'terminating connection due to administrator command',
        poolProgressed: false,
      };
      for (const state of [up, busy, down]) {
        expect(next(state, broken)).toEqual({ state, actions: ['new probe', 'ask again'] });
      }
    });
  });

  describe('a question unanswered for its second', () => {
    it('on a connection begun before the pool made one of its own: begun where the server no longer is, asked again at once', () => {
      for (const state of [up, hung]) {
        expect(next(state, unanswered(connecting(500, true)))).toEqual({ state, actions: ['new probe', 'ask again'] });
      }
    });

    it("while the pool's queries complete is busy, not hung: requests are served as before", () => {
      expect(next(up, unanswered({ made: 'before' }, { poolProgressed: true }))).toEqual({ state: busy, actions: [] });
      expect(next(busy, unanswered({ made: 'before' }, { poolProgressed: true }))).toEqual({
        state: busy,
        actions: [],
      });
    });

    it('while busy after it was judged down or hung, the judgement stands until an answer comes', () => {
      for (const state of [down, hung, slow]) {
        expect(next(state, unanswered({ made: 'before' }, { poolProgressed: true }))).toEqual({ state, actions: [] });
      }
    });

    it("on a connection not made in the pool's wait, while the pool's queries completed meanwhile: busy, and made anew", () => {
      const notMade = unanswered(connecting(CONNECTION_WAIT_MS), { poolProgressedWhileConnecting: true });
      expect(next(up, notMade)).toEqual({ state: busy, actions: ['new probe'] });
    });

    it('on a connection slow to be made while a query of the pool runs without completing: slow to connect, the connections kept', () => {
      const expected = { state: slow, actions: [] };
      expect(next(up, unanswered(connecting(CONNECTION_WAIT_MS - 1), { poolQueryStuck: true }))).toEqual(expected);
      expect(next(busy, unanswered({ made: 'meanwhile' }, { poolQueryStuck: true }))).toEqual(expected);
      expect(failing(slow)).toBe(true);
    });

    it('on a connection slow to be made with no query of the pool waiting: nothing judged (a service just started on a busy machine)', () => {
      expect(next(up, unanswered(connecting(CONNECTION_WAIT_MS - 1)))).toEqual({ state: up, actions: [] });
      expect(next(busy, unanswered({ made: 'meanwhile' }))).toEqual({ state: busy, actions: [] });
    });

    it('on a connection slow to be made after it was judged down or hung: the judgement stands', () => {
      for (const state of [down, hung]) {
        expect(next(state, unanswered(connecting(1_000), { poolQueryStuck: true }))).toEqual({ state, actions: [] });
      }
    });

    it("on a connection made before, none of the pool's queries completing: hung, and the pool's connections closed", () => {
      expect(next(up, unanswered({ made: 'before' }, { poolQueryStuck: true }))).toEqual({
        state: { name: 'hung', reason: 'the database did not answer within 1 s' },
        actions: ['close connections', 'new probe'],
      });
    });

    it("on a connection not made in the pool's wait, none of the pool's queries completing: hung (a stopped pooler)", () => {
      expect(next(slow, unanswered(connecting(CONNECTION_WAIT_MS)))).toEqual({
        state: { name: 'hung', reason: 'the database did not take a connection within 10 s' },
        actions: ['close connections', 'new probe'],
      });
    });
  });

  it('fails new requests at once in slow-to-connect, hung and down only', () => {
    expect([up, busy, slow, hung, down].filter(failing).map((state) => state.name)).toEqual([
      'slow-to-connect',
      'hung',
      'down',
    ]);
  });
});
