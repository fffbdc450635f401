import { Client } from 'pg';
import { client, newBike } from '../support/bikes';
import { freePort, spawnService, type ServiceProcess } from '../support/process';
import { type LogPosition, pruneUntilPast } from '../support/pruning';
import { startTestService, type TestService } from '../support/service';
import { waitFor } from '../support/wait';
import { writer } from '../support/writers';
import { EventSource } from 'undici';
import type { FollowStatus } from '../../client/src/index.ts';
import { catalogAt, changesAfter, type Follower, startFollower, TRANSPORTS, type Transport } from './follower';

/**
 * The client's `follow` (client/src/follow.ts) against the real service: it lists, then follows
 * the feed from the list's cursor, by pages (Node.js) or by an event stream (browsers; here
 * undici's EventSource), and gives every change once, in order, through writers, a killed
 * instance, and a feed that cannot go on (410: it lists again).
 */

const transports = Object.keys(TRANSPORTS) as Transport[];

/** What a follower must end with: /bikes/all, bike for bike, and every change after its last list, once and in order. */
async function expectInStep(follower: Follower, baseUrl: string): Promise<void> {
  expect(follower.catalog).toEqual(await catalogAt(baseUrl));
  const { cursor, changes } = follower.lists[follower.lists.length - 1];
  const cursors = changes.map((change) => change.cursor);
  expect(new Set(cursors).size).toBe(cursors.length);
  expect(cursors).toEqual((await changesAfter(baseUrl, cursor)).map((change) => change.cursor));
}

describe('follow: under 16 writers on two instances', () => {
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

  it('ends equal to /bikes/all, every change after its list once and in order, by pages and by events, from the start and from mid-way', async () => {
    const tokens = [await first.token('writer-a'), await second.token('writer-b')];
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await client(first.baseUrl, tokens[0]).create(newBike())).id);
    const services = [first, second];
    const followers = transports.map((transport, i) => startFollower(services[i].baseUrl, transport));
    const done = { writes: 0 };
    const writers = Array.from({ length: 16 }, (_, w) => writer(services[w % 2].baseUrl, tokens[w % 2], ids, 40, done));
    // A third of the way, two more, each from a list of its own.
    await waitFor('a third of the writes', () => (done.writes >= (16 * 40) / 3 ? true : undefined), { everyMs: 100 });
    followers.push(...transports.map((transport, i) => startFollower(services[1 - i].baseUrl, transport)));
    await Promise.all(writers);
    const last = await client(first.baseUrl, tokens[0]).create(newBike());
    for (const follower of followers) await follower.reached(last);
    for (const follower of followers) await follower.stop();
    console.log(
      `client follow: ${done.writes + 1} writes; changes after each follower's list ` +
        `(pages, events, then mid-way): ${followers.map((follower) => follower.lists[0].changes.length).join(', ')}`,
    );
    for (const follower of followers) await expectInStep(follower, first.baseUrl);
    for (const follower of followers) expect(follower.lists).toHaveLength(1);
  });
});

/** The 410 and the slow onChange share one service, with SQL beside it to prune and to write. */
describe('follow, on a service of its own', () => {
  let svc: TestService;
  let sql: Client;

  beforeAll(async () => {
    svc = await startTestService();
    sql = new Client({ connectionString: svc.databaseUrl });
    await sql.connect();
  });
  afterAll(async () => {
    await sql.end();
    await svc.stop();
  });

  describe('when the feed cannot go on from its cursor (410)', () => {
    it.each(transports)(
      'resumed (%s) from a cursor that pruning has passed, it lists again and ends equal to /bikes/all',
      async (transport) => {
        const api = client(svc.baseUrl, await svc.token());
        const kept = await api.create(newBike());
        const first = startFollower(svc.baseUrl, transport);
        await first.reached(kept);
        await first.stop();
        const stored = first.lists[0].changes.at(-1)?.cursor ?? first.lists[0].cursor;

        const gone = await api.create(newBike());
        await api.request('DELETE', `/bikes/${gone.id}`);
        const changed = { ...kept, totalInventory: 1 };
        await api.request('PATCH', `/bikes/${kept.id}`, { body: { totalInventory: 1 } });
        const [deleted] = (
          await sql.query<LogPosition>(
            `SELECT txid, change_id FROM bike_changes WHERE bike_id = $1 AND kind = 'delete'`,
            [gone.id],
          )
        ).rows;
        // Past the retention (docs/reference/browse-and-sync.md#the-change-feed), which pruning never goes within.
        await sql.query(`UPDATE bike_changes SET changed_at = changed_at - interval '31 days'`);
        await pruneUntilPast(sql, `now() - interval '30 days'`, deleted);
        expect((await fetch(`${svc.baseUrl}/bikes/changes?since=${encodeURIComponent(stored)}`)).status).toBe(410);

        const resumed = startFollower(svc.baseUrl, transport, { from: stored });
        await resumed.reached(changed);
        const after = await api.create(newBike());
        await resumed.reached(after);
        await resumed.stop();
        expect(resumed.lists).toHaveLength(1);
        expect(resumed.catalog.has(gone.id)).toBe(false);
        await expectInStep(resumed, svc.baseUrl);
      },
    );

    it('following (by pages and by events) while a capture trigger is switched off and on: waits out the 503, lists again on the 410, ends equal', async () => {
      const api = client(svc.baseUrl, await svc.token());
      const before = await api.create(newBike());
      const followers = transports.map((transport) => startFollower(svc.baseUrl, transport));
      for (const follower of followers) await follower.reached(before);
      await sql.query('ALTER TABLE bikes DISABLE TRIGGER bikes_changes_on_update');
      try {
        // Not in the log: only a list has it.
        await sql.query('UPDATE bikes SET total_inventory = 99 WHERE id = $1', [before.id]);
        expect((await fetch(`${svc.baseUrl}/bikes/changes`)).status).toBe(503);
      } finally {
        await sql.query('ALTER TABLE bikes ENABLE ALWAYS TRIGGER bikes_changes_on_update');
      }
      const after = await api.create(newBike());
      for (const follower of followers) {
        await follower.reached(after);
        await follower.reached({ ...before, totalInventory: 99 });
        await follower.stop();
        expect(follower.lists.length).toBeGreaterThanOrEqual(2);
        await expectInStep(follower, svc.baseUrl);
      }
    });
  });

  describe('with an onChange slower than the changes come', () => {
    it.each(transports)(
      'holds (%s) at most a page of changes it has not handed over, and hands over every one, in order',
      async (transport) => {
        const api = client(svc.baseUrl, await svc.token());
        const bike = await api.create(newBike());
        // What the client has received of the feed (pages' changes, a stream's events), against what onChange took.
        let received = 0;
        let taken = 0;
        let held = 0;
        const receive = (count: number) => {
          received += count;
          held = Math.max(held, received - taken);
        };
        const counted: typeof fetch = async (input, init) => {
          const response = await fetch(input, init);
          const url = new URL(new Request(input, init).url);
          if (url.pathname === '/bikes/changes' && response.ok)
            receive(((await response.clone().json()) as unknown[]).length);
          return response;
        };
        class CountedEventSource extends EventSource {
          constructor(url: string) {
            super(url);
            this.addEventListener('message', () => this.readyState !== EventSource.CLOSED && receive(1));
          }
        }
        const follower = startFollower(
          svc.baseUrl,
          transport,
          {},
          async (event) => {
            if (event.type === 'list') return;
            taken++;
            await new Promise((resolve) => setTimeout(resolve, 1));
          },
          { fetch: counted, ...(transport === 'events' ? { EventSource: CountedEventSource } : {}) },
        );
        await follower.reached(bike);
        // 3,000 changes in one transaction: they come at once.
        await sql.query(
          `DO $$ BEGIN FOR i IN 1..3000 LOOP UPDATE bikes SET total_inventory = i WHERE id = '${bike.id}'; END LOOP; END $$`,
        );
        await follower.reached({ ...bike, totalInventory: 3000 });
        await follower.stop();
        console.log(`client follow (${transport}), a slow onChange: ${taken} changes, at most ${held} held`);
        expect(taken).toBeGreaterThanOrEqual(3000);
        expect(held).toBeLessThanOrEqual(1000);
        await expectInStep(follower, svc.baseUrl);
      },
    );
  });
});

describe('follow: an instance killed under it', () => {
  let writes: TestService;
  let killed: ServiceProcess;
  let env: Record<string, string>;

  beforeAll(async () => {
    writes = await startTestService();
    env = { DATABASE_URL: writes.databaseUrl, JWT_SECRET: writes.jwtSecret, PORT: String(await freePort()) };
    killed = await spawnService(env);
  });
  afterAll(async () => {
    killed.child.kill('SIGKILL');
    await killed.exited;
    await writes.stop();
  });

  it('says where it stands (onStatus): caught up, offline while the instance is down, then catching up and caught up again', async () => {
    const api = client(writes.baseUrl, await writes.token());
    const statuses = transports.map(() => [] as FollowStatus[]);
    const followers = transports.map((transport, i) =>
      startFollower(killed.baseUrl, transport, { onStatus: (status) => statuses[i].push(status) }),
    );
    const first = await api.create(newBike());
    for (const follower of followers) await follower.reached(first);
    const at = (i: number) => statuses[i].at(-1);
    await waitFor('every follower caught up', () => transports.every((_, i) => at(i) === 'caught-up') || undefined);
    const before = statuses.map((seen) => seen.length);

    killed.child.kill('SIGKILL');
    await killed.exited;
    await waitFor('every follower offline', () => transports.every((_, i) => at(i) === 'offline') || undefined);
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await api.create(newBike()));
    killed = await spawnService(env);
    for (const follower of followers) await follower.reached(made[2]);
    await waitFor(
      'every follower caught up again',
      () => transports.every((_, i) => at(i) === 'caught-up') || undefined,
    );
    for (const [i, follower] of followers.entries()) {
      await follower.stop();
      // Listed, then caught up; a change that came as it was made said nothing more.
      expect(statuses[i].slice(0, before[i])).toEqual(['catching-up', 'caught-up']);
      // Each said once, each time it changed: offline, then the changes made meanwhile, then caught up.
      expect(statuses[i].slice(before[i])).toEqual(['offline', 'catching-up', 'caught-up']);
      await expectInStep(follower, writes.baseUrl);
    }
  });

  it('follows the restarted instance (by pages and by events), missing and repeating nothing', async () => {
    const api = client(writes.baseUrl, await writes.token());
    const followers = transports.map((transport) => startFollower(killed.baseUrl, transport));
    const first = await api.create(newBike());
    for (const follower of followers) await follower.reached(first);

    killed.child.kill('SIGKILL');
    await killed.exited;
    // Written while the instance is down: the followers get them from the restarted one.
    for (let i = 0; i < 5; i++) await api.create(newBike());
    await api.request('DELETE', `/bikes/${first.id}`);
    killed = await spawnService(env);
    const last = await api.create(newBike());
    for (const follower of followers) {
      await follower.reached(last);
      await follower.stop();
      expect(follower.lists).toHaveLength(1);
      await expectInStep(follower, writes.baseUrl);
    }
  });
});
