import { randomInt } from 'node:crypto';
import { Client } from 'pg';
import type { Bike } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import { type EventStream, openEventStream } from '../support/event-stream';
import { startTestService, type TestService } from '../support/service';
import { waitFor } from '../support/wait';
import { writer } from '../support/writers';

/**
 * The change feed under concurrent writers (docs/reference/browse-and-sync.md#the-change-feed), the trap it must
 * avoid: a transaction that takes its place before another can commit after it. Sixteen writers
 * on two instances (creates, replaces, patches, deletes over a shared set of bikes, some as
 * conditional writes) and two sessions of reporting SQL with transactions of mixed lengths
 * (several bikes, a sleep between) write while two followers follow: one from the feed's start,
 * one from a list made mid-way. Event streams follow alike (docs/reference/browse-and-sync.md#live-updates), each
 * on the instance the other writes through too: one from the start, one from the list, and one
 * that leaves mid-way and resumes on the other instance with Last-Event-ID. At the end each
 * follower's catalog is /bikes/all, bike for bike, byte for byte, and each got every change of the
 * log once: none missed, none twice.
 */

interface Change {
  cursor: string;
  type: 'upsert' | 'delete';
  id: string;
  bike?: Bike;
}

/**
 * What the writers write, each to the end however long it takes: a test asserts what the service
 * guarantees, never how much this machine manages in a given time. 16 writers, 32 writes each:
 * 512 through the API; each SQL session, 12 transactions of 3 updates.
 */
const API_WRITES = 32;
const SQL_TRANSACTIONS = 12;
const TOTAL_WRITES = 16 * API_WRITES + 2 * SQL_TRANSACTIONS;

describe('the change feed under concurrent writers on two instances', () => {
  let first: TestService;
  let second: TestService;

  beforeAll(async () => {
    first = await startTestService();
    second = await startTestService({ databaseUrl: first.databaseUrl, jwtSecret: first.jwtSecret });
  });
  afterAll(async () => {
    await second.stop();
    await first.stop();
  });

  /**
   * A follower: pages of the feed from `since`, applied to `catalog`, until it has the change that
   * made `last()` (a write made after every other ended, so after every other in the feed).
   */
  function follower(baseUrl: string, catalog: Map<string, Bike>, since: string | undefined) {
    const received: Change[] = [];
    let last: Bike | undefined;
    const done = (async () => {
      let cursor = since;
      for (;;) {
        const params = new URLSearchParams({ limit: String(randomInt(20, 200)) });
        if (cursor !== undefined) params.set('since', cursor);
        const res = await fetch(`${baseUrl}/bikes/changes?${params}`);
        expect(res.status).toBe(200);
        const page = (await res.json()) as Change[];
        for (const change of page) {
          received.push(change);
          if (change.type === 'upsert') catalog.set(change.id, change.bike as Bike);
          else catalog.delete(change.id);
        }
        if (last && JSON.stringify(catalog.get(last.id)) === JSON.stringify(last)) return;
        if (page.length > 0) cursor = page[page.length - 1].cursor;
        else await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    return {
      received,
      async finish(lastWrite: Bike) {
        last = lastWrite;
        await done;
      },
    };
  }

  /** An event stream's changes, all it has given so far. */
  const changesOf = (...streams: EventStream[]) =>
    streams.flatMap((stream) => stream.events.map((event) => JSON.parse(event.data) as Change));

  async function eventStream(baseUrl: string, headers: Record<string, string> = {}, since?: string) {
    const query = since === undefined ? '' : `?since=${encodeURIComponent(since)}`;
    const stream = await openEventStream(`${baseUrl}/bikes/changes${query}`, { headers });
    expect(stream.status).toBe(200);
    return stream;
  }

  /** Until a stream has given the change that made `last` as it is. */
  const reached = (last: Bike, ...streams: EventStream[]) =>
    waitFor(
      'the last write on the stream',
      () => changesOf(...streams).some((change) => JSON.stringify(change.bike) === JSON.stringify(last)) || undefined,
    );

  it('gives every change once, in an order that rebuilds /bikes/all exactly, from the start and from a list, in pages and as events', async () => {
    const tokens = [await first.token('writer-a'), await second.token('writer-b')];
    const services = [first, second];
    const seeded: string[] = [];
    for (let i = 0; i < 40; i++) seeded.push((await client(first.baseUrl, tokens[0]).create(newBike())).id);
    const ids = [...seeded];

    const startCatalog = new Map<string, Bike>();
    const fromStart = follower(first.baseUrl, startCatalog, undefined);
    const streamedFromStart = await eventStream(second.baseUrl);
    const leaving = await eventStream(first.baseUrl);
    const done = { writes: 0 };
    /** Until the writers have written `share` of what they write. */
    const wrote = (share: number) =>
      waitFor(`${share} of the writes`, () => (done.writes >= share * TOTAL_WRITES ? true : undefined));

    /** Reporting SQL: a transaction over several bikes, with a pause inside, of its own length. */
    const sqlWriter = async () => {
      const db = new Client({ connectionString: first.databaseUrl });
      await db.connect();
      try {
        for (let transaction = 0; transaction < SQL_TRANSACTIONS; transaction++) {
          await db.query('BEGIN');
          for (let i = 0; i < 3; i++) {
            await db.query('UPDATE bikes SET total_inventory = total_inventory + 1 WHERE id = $1', [
              ids[randomInt(ids.length)],
            ]);
            await db.query('SELECT pg_sleep($1)', [randomInt(5, 300) / 1000]);
          }
          await db.query('COMMIT');
          done.writes++;
        }
      } finally {
        await db.end();
      }
    };

    const writers = [
      ...Array.from({ length: 16 }, (_, w) => writer(services[w % 2].baseUrl, tokens[w % 2], ids, API_WRITES, done)),
      sqlWriter(),
      sqlWriter(),
    ];
    // A third of the way, a stream's client leaves (once it has had a change); it comes back on the
    // other instance.
    await wrote(1 / 3);
    await waitFor('a change on the stream that leaves', () => (leaving.events.length > 0 ? true : undefined));
    leaving.close();
    await leaving.ended;
    const lastId = leaving.events[leaving.events.length - 1].id;
    const resumed = await eventStream(second.baseUrl, { 'last-event-id': lastId });
    // Mid-way, a client lists the catalog and follows from where its list stands.
    await wrote(1 / 2);
    const listed = await fetch(`${second.baseUrl}/bikes/all`);
    const listCatalog = new Map(((await listed.json()) as Bike[]).map((bike) => [bike.id, bike]));
    const listCursor = listed.headers.get('catalog-cursor') as string;
    const fromList = follower(second.baseUrl, listCatalog, listCursor);
    const streamedFromList = await eventStream(first.baseUrl, {}, listCursor);
    const streamListCatalog = new Map(listCatalog);
    await Promise.all(writers);
    const lastWrite = await client(first.baseUrl, tokens[0]).create(newBike());
    await Promise.all([
      fromStart.finish(lastWrite),
      fromList.finish(lastWrite),
      reached(lastWrite, streamedFromStart),
      reached(lastWrite, streamedFromList),
      reached(lastWrite, leaving, resumed),
    ]);
    for (const stream of [streamedFromStart, streamedFromList, resumed]) stream.close();
    const streamed = [
      { received: changesOf(streamedFromStart), catalog: new Map<string, Bike>() },
      { received: changesOf(leaving, resumed), catalog: new Map<string, Bike>() },
      { received: changesOf(streamedFromList), catalog: streamListCatalog },
    ];
    for (const { received, catalog } of streamed) {
      for (const change of received) {
        if (change.type === 'upsert') catalog.set(change.id, change.bike as Bike);
        else catalog.delete(change.id);
      }
    }

    const all = (await (await fetch(`${first.baseUrl}/bikes/all`)).json()) as Bike[];
    const db = new Client({ connectionString: first.databaseUrl });
    await db.connect();
    const logged = Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM bike_changes')).rows[0].n);
    await db.end();
    console.log(
      `gap-free: ${done.writes} writes, ${logged} changes logged, ${fromList.received.length} after the list, ` +
        `${leaving.events.length} streamed before leaving`,
    );
    expect(done.writes).toBe(TOTAL_WRITES);

    for (const { received } of [fromStart, fromList, ...streamed]) {
      expect(new Set(received.map((change) => change.cursor)).size).toBe(received.length);
    }
    // From the start: every change the log holds, once each.
    expect(fromStart.received.length).toBe(logged);
    expect(streamed[0].received.length).toBe(logged);
    expect(streamed[1].received.length).toBe(logged);
    // From the list: as many as the pages gave.
    expect(streamed[2].received.length).toBe(fromList.received.length);
    for (const catalog of [startCatalog, listCatalog, ...streamed.map(({ catalog }) => catalog)]) {
      expect(catalog.size).toBe(all.length);
      expect(all.filter((bike) => JSON.stringify(catalog.get(bike.id)) !== JSON.stringify(bike))).toEqual([]);
    }
  });
});
