import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { Client } from 'pg';
import type { Bike } from '../../src/bikes/bike';
import { readConfig } from '../../src/config';
import { type Service, startService } from '../../src/server';
import { client, issueToken, newBike } from '../support/bikes';
import { missing, POSTGRES_15, type Postgres15, startPrimary } from '../support/servers';
import { tempDataDir } from '../support/temp-dir';
import { waitFor } from '../support/wait';

const why = missing(`${POSTGRES_15}/postgres`, `${POSTGRES_15}/pg_dump`, `${POSTGRES_15}/pg_restore`);
if (why) console.log(`restore.test.ts skipped: ${why}`);

/**
 * A catalog restored under a running instance (docs/reference/caching-and-conditions.md#catalog-identity): no ETag given
 * out before the restore stands for what the catalog holds after it, so none is answered 304 and
 * none lets a write through, whether the dump went back in place or into a database made anew.
 */
(why ? describe.skip : describe)('a catalog restored under a running instance', () => {
  let primary: Postgres15;
  let service: Service;
  let api: ReturnType<typeof client>;
  let dumpDir: string;

  // Not execFileSync: the service runs in this process, and a process held still for as long as
  // a busy machine takes to dump finds its database silent for that long (docs/reference/requests-and-answers.md#busy-is-not-down).
  const run = promisify(execFile);
  const dump = async (database: string) => {
    const file = path.join(dumpDir, `${database}-${Date.now()}.dump`);
    await run(path.join(POSTGRES_15, 'pg_dump'), ['-Fc', '-f', file, '-d', primary.url(database)]);
    return file;
  };
  const restore = (file: string, database: string) =>
    run(path.join(POSTGRES_15, 'pg_restore'), ['--clean', '--if-exists', '-d', primary.url(database), file]);
  const admin = async (sql: string) => {
    const db = new Client({ connectionString: primary.url('postgres') });
    await db.connect();
    await db.query(sql).finally(() => db.end());
  };

  /** The tags a client holds: the bike's and the list's, as last read. */
  async function tagsOf(bike: Bike): Promise<{ bike: string; list: string }> {
    const one = await api.request('GET', `/bikes/${bike.id}`);
    const all = await api.request('GET', '/bikes/all');
    return { bike: one.headers.get('etag') as string, list: all.headers.get('etag') as string };
  }

  /** Nothing the client held is honoured: each read answers 200, a write over the old state 412. */
  async function expectNoneHonoured(bike: Bike, held: { bike: string; list: string }): Promise<void> {
    const read = await api.request('GET', `/bikes/${bike.id}`, { headers: { 'if-none-match': held.bike } });
    expect(read.status).toBe(200);
    expect(read.headers.get('etag')).not.toBe(held.bike);
    const list = await api.request('GET', '/bikes/all', { headers: { 'if-none-match': held.list } });
    expect(list.status).toBe(200);
    const write = await api.request('PATCH', `/bikes/${bike.id}`, {
      body: { vendor: 'over a state never seen' },
      headers: { 'if-match': held.bike },
    });
    expect(write.status).toBe(412);
  }

  beforeAll(async () => {
    primary = await startPrimary();
    dumpDir = tempDataDir('dumps');
    await admin('CREATE DATABASE catalog');
    const config = readConfig({
      PORT: '0',
      DATABASE_URL: primary.url('catalog'),
      JWT_SECRET: randomBytes(32).toString('base64url'),
    });
    service = await startService(config, pino({ level: 'silent' }));
    const baseUrl = `http://127.0.0.1:${service.port}`;
    api = client(baseUrl, await issueToken(baseUrl));
  });
  afterAll(async () => {
    await service?.stop();
    await primary?.stop();
    primary?.remove();
    fs.rmSync(dumpDir, { recursive: true, force: true });
  });

  it('in place (pg_restore --clean into the same database): a PATCH after it never repeats a tag given before', async () => {
    const bike = await api.create(newBike({ totalInventory: 1 }));
    const file = await dump('catalog');
    expect((await api.request('PATCH', `/bikes/${bike.id}`, { body: { totalInventory: 2 } })).status).toBe(200);
    const held = await tagsOf(bike);
    await restore(file, 'catalog');
    // The restore took the bike back to its dumped state; the same PATCH again makes the same content.
    const again = await api.request('PATCH', `/bikes/${bike.id}`, { body: { totalInventory: 2 } });
    expect(again.status).toBe(200);
    expect(again.headers.get('etag')).not.toBe(held.bike);
    await api.request('PATCH', `/bikes/${bike.id}`, { body: { totalInventory: 3 } });
    await expectNoneHonoured(bike, held);
  });

  it('while the database is dropped and made anew, before anything is restored into it, every request that needs it answers 503 (none 500), and the restored catalog is served again', async () => {
    const bike = await api.create(newBike());
    const file = await dump('catalog');
    const { id, handle, ...fields } = bike;
    const requests: Array<[string, string, unknown?]> = [
      ['GET', '/readyz'],
      ['GET', '/bikes/all'],
      ['GET', '/bikes'],
      ['GET', `/bikes/${id}`],
      ['GET', `/bikes/by-handle/${handle}`],
      ['GET', '/bikes/search/by-title?query=Hybrid'],
      ['GET', '/bikes/changes'],
      ['POST', '/bikes', newBike()],
      ['PUT', `/bikes/${id}`, { id, handle, ...fields, title: 'Replaced while the catalog is away' }],
      ['PATCH', `/bikes/${id}`, { title: 'Patched while the catalog is away' }],
      ['DELETE', `/bikes/${id}`],
    ];
    const answers = async () =>
      Promise.all(
        requests.map(async ([method, route, body]) => {
          const res = await api.request(method, route, { body });
          await res.arrayBuffer();
          return `${method} ${route.split('?')[0]} ${res.status}`;
        }),
      );

    await admin('DROP DATABASE catalog WITH (FORCE)');
    const whileDropped = await answers();
    await admin('CREATE DATABASE catalog');
    // Rounds a second apart: the first before the service has read anything of the new database.
    const whileEmpty = [await answers()];
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    whileEmpty.push(await answers());
    for (const round of [whileDropped, ...whileEmpty]) {
      expect(round).toEqual(requests.map(([method, route]) => `${method} ${route.split('?')[0]} 503`));
    }

    await restore(file, 'catalog');
    await waitFor(
      'the service to serve the restored catalog',
      async () => ((await api.request('GET', `/bikes/${id}`)).status === 200 ? true : undefined),
      { everyMs: 100 },
    );
    expect((await api.request('GET', '/readyz')).status).toBe(200);
  });

  it('into the database dropped and made anew under the running instance: no tag of before is honoured', async () => {
    const bike = await api.create(newBike());
    const file = await dump('catalog');
    expect((await api.request('PATCH', `/bikes/${bike.id}`, { body: { vendor: 'before the restore' } })).status).toBe(
      200,
    );
    const held = await tagsOf(bike);
    await admin('DROP DATABASE catalog WITH (FORCE)');
    await admin('CREATE DATABASE catalog');
    await restore(file, 'catalog');
    // The pool's connections went with the database; its next ones reach the new one.
    await waitFor(
      'the service to read the new database',
      async () => ((await api.request('GET', `/bikes/${bike.id}`)).status === 200 ? true : undefined),
      { everyMs: 100 },
    );
    const patched = await api.request('PATCH', `/bikes/${bike.id}`, { body: { vendor: 'after the restore' } });
    expect(patched.status).toBe(200);
    await expectNoneHonoured(bike, held);
  });
});
