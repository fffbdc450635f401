import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import type { Bike } from '../../src/bikes/bike';
import { readConfig } from '../../src/config';
import { startService, type Service } from '../../src/server';
import { client, issueToken, newBike } from '../support/bikes';
import { capturedLog, type LogLine } from '../support/log';
import {
  type Bouncer,
  missing,
  PGBOUNCER,
  POSTGRES_15,
  type Postgres15,
  startPgBouncer,
  startPrimary,
} from '../support/servers';
import { waitFor } from '../support/wait';

const why = missing(PGBOUNCER, `${POSTGRES_15}/postgres`);
if (why) console.log(`pgbouncer-outage.test.ts skipped: ${why}`);

/** The service's own cut-off for a query (QUERY_TIMEOUT_MS in src/db/pool.ts): no answer may wait for it. */
const CUT_OFF_MS = 30_000;

interface Answer {
  path: string;
  status: number | 'cut';
  ms: number;
}

/**
 * PostgreSQL stopped behind PgBouncer (transaction mode), while lists (a page, a search, the
 * whole catalog) and GETs by id are in flight: each answers 503 (or, a list whose 200 had begun
 * streaming, is cut), never waits for the 30 s cut-off (docs/reference/requests-and-answers.md#a-database-that-is-busy-down-or-hung);
 * and the service says so once a change of the database's state, not once a probe.
 */
(why ? describe.skip : describe)('PostgreSQL stopped behind PgBouncer', () => {
  let primary: Postgres15;
  let bouncer: Bouncer;
  let service: Service;
  let api: ReturnType<typeof client>;
  let bike: Bike;
  const { lines, logger } = capturedLog();

  beforeAll(async () => {
    primary = await startPrimary();
    const admin = new Client({ connectionString: primary.url('postgres') });
    await admin.connect();
    await admin.query('CREATE DATABASE bikes').finally(() => admin.end());
    bouncer = await startPgBouncer(primary.url('bikes'));
    const config = readConfig({
      PORT: '0',
      DATABASE_URL: bouncer.url,
      DATABASE_DIRECT_URL: primary.url('bikes'),
      JWT_SECRET: randomBytes(32).toString('base64url'),
    });
    service = await startService(config, logger);
    const baseUrl = `http://127.0.0.1:${service.port}`;
    api = client(baseUrl, await issueToken(baseUrl));
    bike = await api.create(newBike({ title: 'Outage bike' }));
    // Lists of several batches (250 bikes each), so that each runs in a snapshot of its own.
    const db = new Client({ connectionString: primary.url('bikes') });
    await db.connect();
    await db.query(
      `INSERT INTO bikes (id, handle, title, product_type, created_at, description, vendor, available_for_sale,
         total_inventory, min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code)
       SELECT gen_random_uuid(), 'outage-' || n, 'Outage ' || n, 'Road', 'now', 'd', 'v', true, n, 1, 'USD', 2, 'USD'
       FROM generate_series(1, 1200) AS n`,
    );
    await db.end();
  });
  afterAll(async () => {
    await service?.stop();
    await bouncer?.remove();
    await primary?.stop();
    primary?.remove();
  });

  const paths = () => [
    '/bikes/all',
    '/bikes?limit=100',
    `/bikes/search/by-title?query=${encodeURIComponent('Outage')}`,
    `/bikes/${bike.id}`,
  ];

  /** Each distinct line with how many times it came, most first. */
  function counted(items: string[]): string {
    const counts = new Map<string, number>();
    for (const item of items) counts.set(item, (counts.get(item) ?? 0) + 1);
    return [...counts]
      .sort((a, b) => b[1] - a[1])
      .map(([item, count]) => `${count} × ${item}`)
      .join(' | ');
  }

  /** One GET, its status, or 'cut' for a 200 whose stream broke, and how long it took. */
  async function get(path: string): Promise<Answer> {
    const started = Date.now();
    let status: Answer['status'];
    try {
      const res = await api.request('GET', path);
      status = res.status;
      await res.arrayBuffer().catch(() => (status = 'cut'));
    } catch {
      status = 'cut';
    }
    return { path, status, ms: Date.now() - started };
  }

  it("answers the first requests after PostgreSQL stopped while the service was idle 503: one of them waits in PgBouncer's queue, the others are refused", async () => {
    // PgBouncer keeps the first statement that finds its server gone waiting (for a server_login_retry
    // and on), and refuses those after it at once ("server login has been failing"): whichever
    // request sent that statement was answered at the 30 s cut-off, when the watch's question,
    // refused, judged the server down but left the pool's connections alone.
    for (let round = 0; round < 3; round++) {
      for (const path of paths()) expect((await get(path)).status).toBe(200);
      await primary.stop();
      const answers = await Promise.all(paths().map(get));
      console.log(`round ${round}: ${answers.map((a) => `${a.path} ${a.status} in ${a.ms} ms`).join(', ')}`);
      for (const answer of answers) {
        expect(answer.status).toBe(503);
        expect(answer.ms).toBeLessThan(CUT_OFF_MS);
      }
      await primary.start();
      await waitFor('every kind of request answered 200 again', async () =>
        (await Promise.all(paths().map(get))).every((answer) => answer.status === 200) ? true : undefined,
      );
    }
  });

  it('answers lists and GETs in flight 503, before the cut-off, and logs the outage once a change', async () => {
    for (const path of paths()) expect((await get(path)).status).toBe(200);
    const warnings = (from: number) => lines.slice(from).filter((line: LogLine) => line.level >= 40);
    const before = lines.length;

    let stopping = false;
    const answers: Answer[] = [];
    const worker = (path: string) => async () => {
      while (!stopping) answers.push(await get(path));
    };
    const workers = paths().flatMap((path) => [worker(path), worker(path)].map((run) => run()));
    await waitFor('answers before the stop', () => (answers.length >= 16 ? true : undefined));
    const atStop = answers.length;
    await primary.stop();
    await waitFor('503s to every kind of request', () =>
      paths().every((path) => answers.slice(atStop).some((answer) => answer.path === path && answer.status === 503))
        ? true
        : undefined,
    );
    // A while down: the service probes its database several times a second meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const down = answers.length;
    await primary.start();
    await waitFor('every kind of request answered 200 again', () =>
      paths().every((path) => answers.slice(down).some((answer) => answer.path === path && answer.status === 200))
        ? true
        : undefined,
    );
    stopping = true;
    await Promise.all(workers);

    const during = answers.slice(atStop, down);
    const statuses = [...new Set(during.map((answer) => `${answer.path} ${answer.status}`))].sort();
    const slowest = Math.max(...during.map((answer) => answer.ms));
    const logged = warnings(before);
    console.log(
      `PostgreSQL stopped behind PgBouncer: ${during.length} answers while down (${statuses.join(', ')}), ` +
        `the slowest in ${slowest} ms; ${logged.length} warnings: ${counted(logged.map((l) => (l.err ? `${l.msg}: ${typeof l.err === 'string' ? l.err : l.err.message}` : l.msg)))}`,
    );
    for (const answer of during) {
      // 200: answered before PostgreSQL stopped; 'cut': a list whose 200 was streaming.
      expect([200, 503, 'cut']).toContain(answer.status);
      expect(answer.ms).toBeLessThan(CUT_OFF_MS);
    }
    // A line for each change of the database's state, and one for each request in flight as it
    // went down or hung (each of the workers), however many probes and requests came between:
    // not one a probe or a 503 (PgBouncer, waiting its server_login_retry, may answer and stall
    // again while PostgreSQL comes back: each is a change).
    const watch = lines
      .slice(before)
      .filter((line) => /^database (slow-to-connect|hung|down|answers again)\b/.test(line.msg));
    const wentDown = watch.filter((line) => line.msg !== 'database answers again');
    expect(wentDown.length).toBeGreaterThanOrEqual(1);
    expect(watch.at(-1)?.msg).toBe('database answers again');
    watch.forEach((line, i) => expect(line.msg).not.toBe(watch[i - 1]?.msg));
    const requests = logged.filter((line) => !watch.includes(line));
    expect(requests.length).toBeLessThanOrEqual(2 * workers.length * wentDown.length);
    expect(logged.length).toBeLessThan(during.filter((answer) => answer.status === 503).length);
  });
});
