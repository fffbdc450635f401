import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { Bike } from '../src/bikes/bike';
import { LIST_BATCH_SIZE } from '../src/bikes/repository';
import { client } from './support/bikes';
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

/** Inserts the bikes in array order (so insertion order is array order), 500 rows per statement. */
async function insertBikes(databaseUrl: string, bikes: Bike[]): Promise<void> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    for (let start = 0; start < bikes.length; start += 500) {
      const rows = bikes.slice(start, start + 500);
      const values = rows.flatMap((b) => [
        b.id,
        b.handle,
        b.title,
        b.productType,
        b.createdAt,
        b.description,
        b.vendor,
        b.availableForSale,
        b.totalInventory,
        b.priceRange.minPrice.amount,
        b.priceRange.minPrice.currencyCode,
        b.priceRange.maxPrice.amount,
        b.priceRange.maxPrice.currencyCode,
      ]);
      const placeholders = rows.map(
        (_, r) => `(${Array.from({ length: 13 }, (_, c) => `$${r * 13 + c + 1}`).join(', ')})`,
      );
      await db.query(
        `INSERT INTO bikes (id, handle, title, product_type, created_at, description, vendor, available_for_sale,
                            total_inventory, min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code)
         VALUES ${placeholders.join(', ')}`,
        values,
      );
    }
  } finally {
    await db.end();
  }
}

/** Polls every 20 ms for up to 15 s. */
const eventually = <T>(what: string, probe: () => Promise<T | undefined>) => waitFor(what, probe, 15_000, 20);

/**
 * Holds the bikes table so that the service's queries on it queue behind a lock, which lets a
 * test stop the service between two batches and end one of its queries from outside.
 */
class TableLock {
  private constructor(
    private readonly db: Client,
    readonly pid: number,
  ) {}

  static async open(databaseUrl: string): Promise<TableLock> {
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    const { rows } = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    return new TableLock(db, rows[0].pid);
  }

  /** Resolves once this session holds the lock; until then it waits in the lock queue. */
  async take(): Promise<void> {
    await this.db.query('BEGIN');
    await this.db.query('LOCK TABLE bikes IN ACCESS EXCLUSIVE MODE');
  }

  async release(): Promise<void> {
    await this.db.query('COMMIT');
  }

  async close(): Promise<void> {
    await this.db.end();
  }
}

/** Sessions of this database, other than the given ones, whose query waits for a lock on bikes. */
async function blockedServiceQuery(admin: Client, ignore: number[]): Promise<number | undefined> {
  const { rows } = await admin.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock'
        AND query ~* 'from "?bikes"?' AND NOT (pid = ANY($1::int[]))`,
    [ignore],
  );
  return rows[0]?.pid;
}

async function isWaitingForLock(admin: Client, pid: number): Promise<true | undefined> {
  const { rows } = await admin.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, [
    pid,
  ]);
  return rows.length > 0 ? true : undefined;
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
    let admin: Client;
    beforeAll(async () => {
      admin = new Client({ connectionString: svc.databaseUrl });
      await admin.connect();
    });
    afterAll(() => admin.end());

    /**
     * Lets the service's batch queries through one at a time, each queued behind a table lock
     * that is handed on to the next lock before it is released, until the response status is
     * out and another batch waits: that query is ended from outside.
     */
    async function failAfterTheStatus(path: string, encoding: string): Promise<Response> {
      let lock = await TableLock.open(svc.databaseUrl);
      const locks = [lock];
      try {
        await lock.take();
        const response = fetch(`${svc.baseUrl}${path}`, { headers: { 'accept-encoding': encoding } });
        let statusSent = false;
        void response.then(
          () => (statusSent = true),
          () => undefined,
        );
        for (;;) {
          const waiting = await eventually('a batch waits', () =>
            blockedServiceQuery(
              admin,
              locks.map((l) => l.pid),
            ),
          );
          if (!statusSent) await Promise.race([response, new Promise((resolve) => setTimeout(resolve, 200))]);
          if (statusSent) {
            await admin.query('SELECT pg_terminate_backend($1)', [waiting]);
            return await response;
          }
          const next = await TableLock.open(svc.databaseUrl);
          locks.push(next);
          const taken = next.take();
          await eventually('the next lock waits', () => isWaitingForLock(admin, next.pid));
          await lock.release();
          await taken;
          lock = next;
        }
      } finally {
        await lock.release().catch(() => undefined);
        for (const l of locks) await l.close();
      }
    }

    it.each([
      ['/bikes/all', 'identity'],
      ['/bikes/all', 'gzip'],
      ['/bikes/search/by-title?query=Road', 'identity'],
      ['/bikes/search/by-title?query=Road', 'br'],
    ])(
      'between two batches of %s (%s), after the status, the response breaks off so that reading the body fails',
      async (path, encoding) => {
        const res = await failAfterTheStatus(path, encoding);
        expect(res.status).toBe(200);
        await expect(res.text()).rejects.toThrow();

        // The pool replaces the lost connection: the next request is whole again.
        const again = await getArray(path);
        expect(again.status).toBe(200);
        expect(JSON.parse(again.text).length).toBeGreaterThan(2 * LIST_BATCH_SIZE);
      },
    );

    it('before the first batch, it answers 503 with no array at all', async () => {
      const lock = await TableLock.open(svc.databaseUrl);
      try {
        await lock.take();
        const response = fetch(`${svc.baseUrl}/bikes/all`);
        const batch1 = await eventually('the first batch waits', () => blockedServiceQuery(admin, [lock.pid]));
        await admin.query('SELECT pg_terminate_backend($1)', [batch1]);
        const res = await response;
        expect(res.status).toBe(503);
        expect(await res.text()).not.toMatch(/^\[/);
      } finally {
        await lock.release();
        await lock.close();
      }
    });
  });
});
