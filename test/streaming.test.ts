import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Client } from 'pg';
import { type Bike, bike } from '../src/bikes/bike';
import { FIELDS, toModelFields } from '../src/bikes/fields';
import { exampleOf } from '../src/http/schema';
import { LIST_BATCH_SIZE } from '../src/bikes/repository';
import { seedBikes } from './resilience/support/postgres';
import { client } from './support/bikes';
import { capturedLog } from './support/log';
import { readMetrics, valueOf } from './support/metrics';
import { startTestService, type TestService } from './support/service';
import { waitFor } from './support/wait';

/**
 * /bikes/all and the search stream their JSON array in batches (LIST_BATCH_SIZE rows). These tests
 * run the real server over a catalog of 2500 bikes seeded with SQL, so the answers span several
 * batches, and break the database between two batches to see what a client gets.
 */

const CATALOG_SIZE = 2500;

/**
 * Titles with LIKE's special characters, each beside a decoy that an unescaped pattern would
 * also match: "100%" / "100 ", "50_50" / "50-50", "C:\bikes" / "C:bikes".
 */
const TITLE_SHAPES = [
  (i: number) => `Road 100% Carbon ${i}`,
  (i: number) => `Road 100 Carbon ${i}`,
  (i: number) => `Road Gravel 50_50 ${i}`,
  (i: number) => `Road Gravel 50-50 ${i}`,
  (i: number) => `Cargo C:\\bikes\\${i}`,
  (i: number) => `Cargo C:bikes ${i}`,
  (i: number) => `ÉLAN road ${i}`,
];

function catalog(size: number): Bike[] {
  return Array.from({ length: size }, (_, i) => {
    const title = TITLE_SHAPES[i % TITLE_SHAPES.length](i);
    return {
      ...exampleOf(bike),
      id: randomUUID(),
      handle: title.replaceAll(' ', '-').toLowerCase(),
      title,
      productType: i % 2 ? 'Road' : 'Gravel',
      createdAt: `2024-01-01T00:00:${String(i % 60).padStart(2, '0')}Z`,
      description: `Bike number ${i}`,
      vendor: 'Sentra',
      availableForSale: i % 3 !== 0,
      totalInventory: i,
      priceRange: {
        minPrice: { amount: 100 + i / 100, currencyCode: 'USD' },
        maxPrice: { amount: 200 + i / 100, currencyCode: 'EUR' },
      },
    };
  });
}

/** The columns of a bike, and each one's field by its name in rows. */
const COLUMNS = Object.values(FIELDS);

/** Inserts the bikes in array order (so insertion order is array order), 500 rows per statement. */
async function insertBikes(databaseUrl: string, bikes: Bike[]): Promise<void> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    for (let start = 0; start < bikes.length; start += 500) {
      const rows = bikes.slice(start, start + 500);
      const values = rows.flatMap((b) => {
        const row = toModelFields(b);
        return COLUMNS.map(({ name }) => row[name]);
      });
      const placeholders = rows.map(
        (_, r) => `(${COLUMNS.map((_, c) => `$${r * COLUMNS.length + c + 1}`).join(', ')})`,
      );
      await db.query(
        `INSERT INTO bikes (${COLUMNS.map(({ column }) => column).join(', ')}) VALUES ${placeholders.join(', ')}`,
        values,
      );
    }
  } finally {
    await db.end();
  }
}

/** Polls every 20 ms. */
const eventually = <T>(what: string, probe: () => Promise<T | undefined>) => waitFor(what, probe, { everyMs: 20 });

/**
 * The service's session that serves a list from its snapshot (a REPEATABLE READ transaction), once
 * it sits idle in that transaction: the response is out and held back by a client that reads
 * nothing, so more batches are still to come.
 */
async function stalledListSession(admin: Client): Promise<number | undefined> {
  const { rows } = await admin.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid()
        AND state = 'idle in transaction' AND query ~* 'from "?bikes"?'`,
  );
  return rows[0]?.pid;
}

describe('streamed arrays over a catalog larger than one batch', () => {
  let svc: TestService;
  let bikes: Bike[];

  beforeAll(async () => {
    svc = await startTestService();
    bikes = catalog(CATALOG_SIZE);
    await insertBikes(svc.databaseUrl, bikes);
  });
  afterAll(() => svc.stop());

  async function getArray(path: string): Promise<{ status: number; type: string | null; text: string }> {
    const res = await client(svc.baseUrl).request('GET', path);
    return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
  }

  describe('GET /bikes/all', () => {
    it('answers every bike, in insertion order, as one well-formed JSON array', async () => {
      const res = await getArray('/bikes/all');
      expect(res.status).toBe(200);
      expect(res.type).toMatch(/^application\/json/);
      expect(res.text.startsWith('[{')).toBe(true);
      expect(res.text.endsWith('}]')).toBe(true);
      const list = JSON.parse(res.text) as Bike[];
      expect(list).toHaveLength(CATALOG_SIZE);
      expect(list).toEqual(bikes);
    });

    it('answers HEAD with the headers of GET and no body', async () => {
      const res = await client(svc.baseUrl).request('HEAD', '/bikes/all');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.text()).toBe('');
    });
  });

  describe('GET /bikes/search/by-title', () => {
    // Terms with LIKE's wildcards and escape character, terms that match across several batches,
    // case, non-ASCII and the empty term (every bike).
    const terms = [
      'Road',
      'road',
      'Carbon',
      '100%',
      '%',
      '100',
      '_',
      '50_50',
      '50-50',
      '\\',
      'C:\\bikes',
      'C:bikes',
      'É',
      'ÉLAN road 1',
      '7',
      '',
    ];

    it.each(terms)('for %j answers exactly the bikes whose title contains it, in insertion order', async (term) => {
      const res = await getArray(`/bikes/search/by-title?query=${encodeURIComponent(term)}`);
      expect(res.status).toBe(200);
      expect(res.type).toMatch(/^application\/json/);
      const expected = bikes.filter((bike) => bike.title.includes(term));
      expect(JSON.parse(res.text)).toEqual(expected);
    });

    it('has terms whose result spans several batches (a check on the test catalog)', () => {
      // Guards the test data: the terms above must include a result that spans batches.
      expect(CATALOG_SIZE).toBeGreaterThan(4 * LIST_BATCH_SIZE);
      expect(bikes.filter((bike) => bike.title.includes('Road')).length).toBeGreaterThan(2 * LIST_BATCH_SIZE);
    });
  });

  describe('when the database fails', () => {
    /** Enough bikes that a client that reads nothing holds the list back: socket buffers cannot take it all. */
    const LARGE_CATALOG = 60_000;
    let large: TestService;
    let admin: Client;
    const log = capturedLog();
    beforeAll(async () => {
      large = await startTestService({ logger: log.logger });
      await seedBikes(large.databaseUrl, LARGE_CATALOG, 'Road Stalled');
      admin = new Client({ connectionString: large.databaseUrl });
      await admin.connect();
    });
    afterAll(async () => {
      await admin.end();
      await large.stop();
    });

    it('a list that ends early (HEAD, or a client gone mid-stream, compressed or not) gives its connection back at once', async () => {
      const checkedOut = async () => {
        const families = await readMetrics(large.baseUrl);
        return (
          valueOf(families, 'db_pool_clients', { pool: 'primary', state: 'total' }) -
          valueOf(families, 'db_pool_clients', { pool: 'primary', state: 'idle' })
        );
      };
      log.lines.length = 0;
      // More than the pool's connections, so one held by each would leave none for the next read.
      for (let i = 0; i < 12; i++) {
        expect((await fetch(`${large.baseUrl}/bikes/all`, { method: 'HEAD' })).status).toBe(200);
        for (const encoding of ['identity', 'gzip']) {
          await new Promise<void>((resolve, reject) =>
            http
              .get(`${large.baseUrl}/bikes/all`, { headers: { 'accept-encoding': encoding } }, (res) => {
                res.once('data', () => {
                  res.destroy();
                  resolve();
                });
              })
              .on('error', reject),
          );
        }
      }
      await eventually('every list connection to be back in the pool', async () =>
        (await checkedOut()) === 0 ? true : undefined,
      );
      // Given back by the lists that ended, not taken back by the pool's cut-off for a query held
      // too long (QUERY_TIMEOUT_MS, src/db/pool.ts), which logs that it closed the connection.
      expect(log.lines.filter((line) => line.msg === 'database connection lost')).toEqual([]);
      expect((await fetch(`${large.baseUrl}/bikes/${randomUUID()}`)).status).toBe(404);
    });

    /**
     * Asks for `path` and reads nothing of the body, so the service stops between two batches,
     * inside its snapshot; then ends its database session from outside, and reads the body.
     */
    async function failAfterTheStatus(
      path: string,
      encoding: string,
    ): Promise<{ status: number; body: Promise<string> }> {
      const response = await new Promise<http.IncomingMessage>((resolve, reject) =>
        http.get(`${large.baseUrl}${path}`, { headers: { 'accept-encoding': encoding } }, resolve).on('error', reject),
      );
      response.pause();
      const session = await eventually('the list to wait for its client', () => stalledListSession(admin));
      await admin.query('SELECT pg_terminate_backend($1)', [session]);
      const body = new Promise<string>((resolve, reject) => {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => (response.complete ? resolve(text) : reject(new Error('response cut short'))));
        response.on('error', reject);
        response.on('aborted', () => reject(new Error('response aborted')));
      });
      response.resume();
      return { status: response.statusCode ?? 0, body };
    }

    it.each([
      ['/bikes/all', 'identity'],
      ['/bikes/all', 'br'],
      ['/bikes/search/by-title?query=Road', 'identity'],
      ['/bikes/search/by-title?query=Road', 'br'],
    ])(
      'between two batches of %s (%s), after the status, the response breaks off so that reading the body fails',
      async (path, encoding) => {
        const res = await failAfterTheStatus(path, encoding);
        expect(res.status).toBe(200);
        await expect(res.body).rejects.toThrow();

        // The pool replaces the lost connection: the next list is whole again. One bike of it: the
        // whole catalog may take a busy machine longer to send than a list may hold its
        // connection (the pool's cut-off, QUERY_TIMEOUT_MS in src/db/pool.ts).
        const again = await fetch(`${large.baseUrl}/bikes/search/by-title?query=Road%20Stalled%20${LARGE_CATALOG}`);
        expect(again.status).toBe(200);
        expect(((await again.json()) as Bike[]).map((bike) => bike.title)).toEqual([`Road Stalled ${LARGE_CATALOG}`]);
      },
    );

    it('before the first batch, it answers 503 with no array at all', async () => {
      const holder = new Client({ connectionString: large.databaseUrl });
      await holder.connect();
      try {
        // The list's first query waits behind this lock until its session is ended.
        await holder.query('SET lock_timeout = 0');
        await holder.query('BEGIN');
        await holder.query('LOCK TABLE catalog_version_slots IN ACCESS EXCLUSIVE MODE');
        const response = fetch(`${large.baseUrl}/bikes/all`);
        const waiting = await eventually('the list to wait for the lock', async () => {
          const { rows } = await admin.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1`,
            [(await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid],
          );
          return rows[0]?.pid;
        });
        await admin.query('SELECT pg_terminate_backend($1)', [waiting]);
        const res = await response;
        expect(res.status).toBe(503);
        expect(await res.text()).not.toMatch(/^\[/);
      } finally {
        await holder.query('ROLLBACK');
        await holder.end();
      }
    });
  });
});

/**
 * A client that goes away mid-list (docs/reference/http.md#clients-that-go-away): logged at info,
 * with what happened, never as an error of ours.
 */
describe('when the client goes away in the middle of a list', () => {
  /** Enough bikes that the list is still streaming when the client leaves. */
  const LARGE_CATALOG = 20_000;
  const { lines, logger } = capturedLog();
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService({ logger });
    await seedBikes(svc.databaseUrl, LARGE_CATALOG, 'Road Abandoned');
  });
  afterAll(() => svc.stop());

  it.each(['identity', 'gzip'])(
    'when the client resets the connection after the first bytes (%s), it logs no warning or error, and one info line that the connection was lost, with its code',
    async (encoding) => {
      lines.length = 0;
      await new Promise<void>((resolve, reject) =>
        http
          .get(`${svc.baseUrl}/bikes/all`, { headers: { 'accept-encoding': encoding } }, (res) => {
            res.once('data', () => {
              // A reset, not a polite close: what a client that crashed or was killed does.
              res.socket.resetAndDestroy();
              resolve();
            });
          })
          .on('error', reject),
      );
      const found = (msg: string, path?: string) => async () =>
        lines.find((line) => line.msg === msg && (path === undefined || line.path === path));
      await waitFor('the line that the connection was lost', found('connection lost before the response ended'));
      // The list's line: others may come meanwhile (the conformance check reads /openapi.json).
      const request = await waitFor('the request line', found('request', '/bikes/all'));
      expect(request).toMatchObject({ path: '/bikes/all', status: 200, aborted: true });
      expect(lines.filter((line) => line.level >= 40)).toEqual([]);
      expect(lines.filter((line) => line.msg === 'connection lost before the response ended')).toEqual([
        expect.objectContaining({ level: 30, requestId: request.requestId, code: expect.any(String) }),
      ]);
    },
  );
});
