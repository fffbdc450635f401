import { randomBytes } from 'node:crypto';
import { type Bike, createCatalogClient } from '../../client/src/index.ts';
import { newBike } from '../support/bikes';
import { createEmptyTestDatabase } from '../support/databases';
import { spawnService, type ServiceProcess } from '../support/process';
import { type Bouncer, missing, PGBOUNCER, startPgBouncer } from '../support/servers';
import { waitFor } from '../support/wait';

const why = missing(PGBOUNCER);
if (why) console.log(`client/pgbouncer.test.ts skipped: ${why}`);

/**
 * The client's creates through a PgBouncer (transaction mode) that hangs (SIGSTOP) and wakes: the
 * service answers 503 (nothing written) or 504 (`Write-Outcome: unknown`: the statement may still
 * run when PgBouncer wakes, docs/reference/requests-and-answers.md#a-5xx-says-what-was-written), and the client tries
 * again under the same Idempotency-Key until an answer settles it. Every create ends with exactly
 * one bike.
 */
(why ? describe.skip : describe)('creates through a PgBouncer that hangs and wakes', () => {
  let bouncer: Bouncer;
  let svc: ServiceProcess;

  beforeAll(async () => {
    const direct = await createEmptyTestDatabase();
    bouncer = await startPgBouncer(direct);
    svc = await spawnService({
      DATABASE_URL: bouncer.url,
      DATABASE_DIRECT_URL: direct,
      JWT_SECRET: randomBytes(32).toString('base64url'),
    });
  });
  afterAll(async () => {
    svc?.child.kill('SIGTERM');
    await svc?.exited;
    await bouncer?.remove();
  });

  it('end with exactly one bike each, the one each create answered', async () => {
    const unsettled: string[] = [];
    let replayed = 0;
    const catalog = createCatalogClient({
      baseUrl: svc.baseUrl,
      username: 'shop',
      // Enough for the hang below on a slow machine: each answer while it lasts takes up to 2 s.
      attempts: 30,
      fetch: async (input, init) => {
        const response = await fetch(input, init).catch((err: unknown) => {
          unsettled.push('no answer');
          throw err;
        });
        if (response.status >= 500) unsettled.push(String(response.status));
        if (response.headers.get('idempotent-replayed') === 'true') replayed++;
        return response;
      },
    });
    const made = new Map<string, Bike>();
    let stopping = false;
    const worker = async () => {
      while (!stopping) {
        const fields = newBike();
        made.set(fields.title, await catalog.create(fields));
      }
    };
    const workers = Array.from({ length: 4 }, worker);
    await waitFor('creates before the hang', () => (made.size >= 8 ? true : undefined));
    bouncer.signal('hang');
    try {
      await waitFor('answers that settle nothing', () => (unsettled.length >= 4 ? true : undefined));
    } finally {
      bouncer.signal('resume');
    }
    const before = made.size;
    await waitFor('creates after it woke', () => (made.size >= before + 8 ? true : undefined));
    stopping = true;
    await Promise.all(workers);

    const all = (await (await fetch(`${svc.baseUrl}/bikes/all`)).json()) as Bike[];
    console.log(
      `client through PgBouncer: ${made.size} creates; answers that settled nothing: ${unsettled.join(' ')}; ` +
        `answers replayed for a key: ${replayed}`,
    );
    expect(all).toHaveLength(made.size);
    expect(new Map(all.map((bike) => [bike.title, bike]))).toEqual(made);
  });
});
