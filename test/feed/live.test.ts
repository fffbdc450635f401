import { Writable } from 'node:stream';
import { Client } from 'pg';
import pino from 'pino';
import type { Bike } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import { type EventStream, openEventStream } from '../support/event-stream';
import { startTestService, type TestService } from '../support/service';
import { insertBike, sessionBeside } from '../support/sessions';
import { waitFor } from '../support/wait';

/**
 * GET /bikes/changes as Server-Sent Events (docs/reference/browse-and-sync.md#live-updates): the changes as they
 * commit, through any instance, to a stream on another; resumed after Last-Event-ID; from a list's
 * cursor without missing or repeating what the list had; bounded per client and per instance;
 * ended with a retry hint when the service stops, and when the log can no longer be followed.
 */

interface Change {
  cursor: string;
  type: 'upsert' | 'delete';
  id: string;
  bike?: Bike;
}

const changesOf = (stream: EventStream) => stream.events.map((event) => JSON.parse(event.data) as Change);

/** Until the stream has given a change that `matches`. */
const arrived = (stream: EventStream, what: string, matches: (change: Change) => boolean) =>
  waitFor(what, () => (changesOf(stream).some(matches) ? true : undefined));

const upsertOf = (bike: Bike) => (change: Change) => JSON.stringify(change.bike) === JSON.stringify(bike);
const deleteOf = (id: string) => (change: Change) => change.type === 'delete' && change.id === id;

describe('GET /bikes/changes as an event stream, two instances on one database', () => {
  let first: TestService;
  let second: TestService;
  let onFirst: ReturnType<typeof client>;
  let onSecond: ReturnType<typeof client>;
  const streams: EventStream[] = [];

  beforeAll(async () => {
    first = await startTestService();
    second = await startTestService({
      databaseUrl: first.databaseUrl,
      jwtSecret: first.jwtSecret,
      tuning: { heartbeatMs: 200 },
    });
    onFirst = client(first.baseUrl, await first.token());
    onSecond = client(second.baseUrl, await second.token());
  });
  afterEach(() => {
    for (const stream of streams.splice(0)) stream.close();
  });
  afterAll(async () => {
    await second.stop();
    await first.stop();
  });

  /** A stream of `svc`'s, closed after the test. */
  async function stream(svc: TestService, query = '', headers: Record<string, string> = {}): Promise<EventStream> {
    const opened = await openEventStream(`${svc.baseUrl}/bikes/changes${query}`, { headers });
    streams.push(opened);
    return opened;
  }

  /** Where the feed stands now: the cursor a list gives. */
  const now = async () => (await onFirst.request('GET', '/bikes/all')).headers.get('catalog-cursor') as string;
  const since = (cursor: string) => `?since=${encodeURIComponent(cursor)}`;

  it('streams the creates, updates and deletes written through the other instance, in order, each event the change as a page gives it', async () => {
    const start = await now();
    const events = await stream(second, since(start), { 'accept-encoding': 'gzip, br' });
    expect(events.status).toBe(200);
    expect(events.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(events.headers['cache-control']).toBe('no-store');
    expect(events.headers['x-accel-buffering']).toBe('no');
    expect(events.headers.vary).toMatch(/\bAccept\b/);
    // Never compressed: a compressor would hold events back.
    expect(events.headers['content-encoding']).toBeUndefined();

    const bike = await onFirst.create(newBike());
    const patched = (await (
      await onFirst.request('PATCH', `/bikes/${bike.id}`, { body: { vendor: 'Other' } })
    ).json()) as Bike;
    expect((await onFirst.request('DELETE', `/bikes/${bike.id}`)).status).toBe(200);
    await arrived(events, 'the delete', deleteOf(bike.id));

    expect(changesOf(events).map(({ type, id, bike: after }) => ({ type, id, bike: after }))).toEqual([
      { type: 'upsert', id: bike.id, bike },
      { type: 'upsert', id: bike.id, bike: patched },
      { type: 'delete', id: bike.id, bike: undefined },
    ]);
    expect(events.events.map((event) => event.type)).toEqual(['message', 'message', 'message']);
    expect(events.events.map((event) => event.id)).toEqual(changesOf(events).map((change) => change.cursor));
    expect(events.retries[0]).toBeGreaterThanOrEqual(1_000);
    // The same bytes as a page of the feed, cursors included.
    const page = await onFirst.request('GET', `/bikes/changes${since(start)}`);
    expect(await page.text()).toBe(`[${events.events.map((event) => event.data).join(',')}]`);
    // A page says it varies on Accept too.
    expect(page.headers.get('vary')).toMatch(/\bAccept\b/);
  });

  it('resumes after Last-Event-ID, which wins over since, with exactly the changes after it', async () => {
    const start = await now();
    const before = await stream(second, since(start));
    const bikes = [await onFirst.create(newBike()), await onSecond.create(newBike()), await onFirst.create(newBike())];
    await arrived(before, 'the third create', upsertOf(bikes[2]));
    before.close();
    bikes.push(await onSecond.create(newBike()), await onFirst.create(newBike()));

    const resumed = await stream(first, since(start), { 'last-event-id': before.events[1].id });
    await arrived(resumed, 'the fifth create', upsertOf(bikes[4]));
    expect(changesOf(resumed).map((change) => change.id)).toEqual(bikes.slice(2).map((bike) => bike.id));

    const bad = await stream(first, since(start), { 'last-event-id': 'not-a-cursor' });
    expect(bad.status).toBe(400);
    expect(bad.headers['x-invalid-field']).toBe('last-event-id');
    expect(bad.headers.vary).toMatch(/\bAccept\b/);
    await bad.ended;
    expect(bad.text()).toBe('Bad Request');
  });

  it("from a list's Catalog-Cursor, taken while a transaction that writes is open: nothing the list had, nothing missed", async () => {
    const early = await onFirst.create(newBike());
    const long = new Client({ connectionString: first.databaseUrl });
    await long.connect();
    // The writes while it is open go through a session of another catalog version slot, which a
    // service connection might not be.
    const writer = await sessionBeside(first.databaseUrl, long);
    const insert = async () => {
      const id = await insertBike(writer, newBike());
      const res = await onFirst.request('GET', `/bikes/${id}`, { headers: { 'x-read-from': 'primary' } });
      return (await res.json()) as Bike;
    };
    try {
      await long.query('BEGIN');
      await long.query(`UPDATE bikes SET vendor = 'Long' WHERE id = $1`, [early.id]);
      // Committed, so in the list, though it began writing after the long transaction.
      const listedOne = await insert();
      const listed = await onSecond.request('GET', '/bikes/all');
      const catalog = new Map(((await listed.json()) as Bike[]).map((bike) => [bike.id, bike]));
      expect(catalog.has(listedOne.id)).toBe(true);
      const events = await stream(second, since(listed.headers.get('catalog-cursor') as string));
      const during = await insert();
      await long.query('COMMIT');
      const after = await onFirst.create(newBike());
      await arrived(events, 'the create after the commit', upsertOf(after));

      expect(changesOf(events).map((change) => [change.id, change.bike?.vendor])).toEqual([
        [early.id, 'Long'],
        [during.id, during.vendor],
        [after.id, after.vendor],
      ]);
      for (const change of changesOf(events)) catalog.set(change.id, change.bike as Bike);
      const all = (await (await onFirst.request('GET', '/bikes/all')).json()) as Bike[];
      expect(all.map((bike) => JSON.stringify(catalog.get(bike.id)))).toEqual(all.map((bike) => JSON.stringify(bike)));
      expect(catalog.size).toBe(all.length);
    } finally {
      await long.end();
      await writer.end();
    }
  });

  it('sends a comment now and then, and every stream of a client is counted in http_event_streams', async () => {
    const events = await stream(second, since(await now()));
    await waitFor('two heartbeats', () =>
      events.comments.filter((c) => c === 'keep-alive').length >= 2 ? true : undefined,
    );
    const gauge = async () => {
      const text = await (await fetch(`${second.baseUrl}/metrics`)).text();
      return Number(/^http_event_streams (\d+)$/m.exec(text)?.[1]);
    };
    // (Streams of the tests before may take a moment to be seen closed.)
    await waitFor('this stream alone to be counted', async () => ((await gauge()) === 1 ? true : undefined));
    events.close();
    await waitFor('the stream to be counted no more', async () => ((await gauge()) === 0 ? true : undefined));
  });

  it('answers HEAD as GET would, with no stream; OPTIONS with the methods', async () => {
    const head = await openEventStream(`${second.baseUrl}/bikes/changes`, { method: 'HEAD' });
    await head.ended;
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(head.headers['x-accel-buffering']).toBe('no');
    expect(head.text()).toBe('');
    const options = await fetch(`${second.baseUrl}/bikes/changes`, { method: 'OPTIONS' });
    expect(options.status).toBe(204);
    // (The path is also /bikes/:id's, whose methods it lists too: docs/reference/http.md#path-matching.)
    expect(options.headers.get('allow')?.split(', ')).toEqual(expect.arrayContaining(['HEAD', 'GET']));
  });

  it('ends a stream when a capture trigger is switched off; then 503, and 410 once it is on again', async () => {
    const events = await stream(second, since(await now()));
    const bike = await onFirst.create(newBike());
    await arrived(events, 'the create', upsertOf(bike));
    const sql = new Client({ connectionString: first.databaseUrl });
    await sql.connect();
    try {
      await sql.query('ALTER TABLE bikes DISABLE TRIGGER bikes_changes_on_update');
      try {
        await events.ended;
        expect(events.comments).toContain('the change log cannot be followed from here');
        expect(events.retries).toHaveLength(2);
        const last = { 'last-event-id': events.events[0].id };
        expect((await stream(first, '', last)).status).toBe(503);
      } finally {
        await sql.query('ALTER TABLE bikes ENABLE ALWAYS TRIGGER bikes_changes_on_update');
      }
      expect((await stream(first, '', { 'last-event-id': events.events[0].id })).status).toBe(410);
    } finally {
      await sql.end();
    }
  });
});

describe('event streams: bounds per client and per instance, and a shutdown', () => {
  let svc: TestService;
  /** Three clients, told apart by the address the proxy in front says (TRUST_PROXY). */
  const as = (client: string) => ({ 'x-forwarded-for': `10.0.0.${client}` });
  const streams: EventStream[] = [];
  const open = async (headers: Record<string, string>) => {
    const stream = await openEventStream(`${svc.baseUrl}/bikes/changes`, { headers });
    streams.push(stream);
    return stream;
  };

  /** What the service logged at warn and above. */
  const logged: { msg: string; err?: string }[] = [];
  const capture = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logged.push(JSON.parse(line));
      done();
    },
  });

  beforeAll(async () => {
    svc = await startTestService({
      env: { TRUST_PROXY: '1', MAX_EVENT_STREAMS_PER_CLIENT: '2', MAX_EVENT_STREAMS: '3' },
      logger: pino({ level: 'warn' }, capture),
    });
  });
  afterAll(async () => {
    for (const stream of streams) stream.close();
    await svc.stop();
  });

  it("answers 429 to a client past its streams, 503 past the instance's, with Retry-After; a page is no stream", async () => {
    const [a1, a2] = [await open(as('1')), await open(as('1'))];
    expect([a1.status, a2.status]).toEqual([200, 200]);
    const refused = await open(as('1'));
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers.vary).toMatch(/\bAccept\b/);
    expect((await fetch(`${svc.baseUrl}/bikes/changes`, { headers: as('1') })).status).toBe(200);

    expect((await open(as('2'))).status).toBe(200);
    const full = await open(as('2'));
    expect(full.status).toBe(503);
    expect(full.headers['retry-after']).toBe('1');
    // Logged as what it is, not as the database being away.
    const said = logged.map(({ msg, err }) => `${msg}: ${err}`);
    expect(said).toContain('unavailable: this instance has its 3 event streams open (MAX_EVENT_STREAMS)');
    expect(said.filter((line) => line.startsWith('database unavailable'))).toEqual([]);

    // A stream that ends frees its place, for its client and for the instance.
    a1.close();
    await waitFor('a stream to be admitted again', async () => {
      const again = await open(as('1'));
      return again.status === 200 ? again : undefined;
    });
  });

  it('ends every stream with a retry hint when the service stops, without waiting for the grace of requests in flight', async () => {
    const other = await startTestService({ databaseUrl: svc.databaseUrl, jwtSecret: svc.jwtSecret });
    const events = await openEventStream(`${other.baseUrl}/bikes/changes`);
    streams.push(events);
    expect(events.status).toBe(200);
    await other.stop();
    await events.ended;
    // Ended by the service, whole and with its word, not cut when the grace of requests in flight
    // ran out (SHUTDOWN_GRACE_MS, src/server.ts).
    expect(events.whole()).toBe(true);
    expect(events.comments).toContain('the server is shutting down');
    const retry = events.retries[events.retries.length - 1];
    expect(events.retries).toHaveLength(2);
    expect(retry).toBeGreaterThanOrEqual(1_000);
    expect(retry).toBeLessThan(3_000);
  });
});
