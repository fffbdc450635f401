import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import type { Bike } from '../../src/bikes/bike';
import { client, issueToken, newBike } from '../support/bikes';
import { createEmptyTestDatabase } from '../support/databases';
import { spawnService, type ServiceProcess } from '../support/process';
import { type Bouncer, missing, PGBOUNCER, startPgBouncer } from '../support/servers';
import { waitFor } from '../support/wait';
import { type Receiver, startReceiver } from '../support/webhook-receiver';

const why = missing(PGBOUNCER);
if (why) console.log(`webhooks delivery.test.ts skipped: ${why}`);

const CLI = path.join(__dirname, '..', '..', 'dist', 'cli', 'webhooks.js');

/** What an acknowledged write must arrive as: its event type, and its data as the API answered. */
interface Expected {
  type: string;
  data: unknown;
}

const keyOf = ({ type, data }: Expected) => `${type} ${JSON.stringify(data)}`;

/**
 * Webhooks (docs/webhooks.md) through the real service: two instances through PgBouncer in
 * transaction pooling mode, a real receiver that verifies each message with the standardwebhooks
 * library, answers 500 to the first attempt of every fourth message and hangs once; the instance
 * delivering is killed with SIGKILL while it delivers, PgBouncer is stopped (SIGSTOP) a moment.
 * Every write the API acknowledged arrives, verified; a write rolled back never does; a
 * subscription whose attempts ran out is disabled, says why, and once replayed gets everything.
 */
(why ? describe.skip : describe)('webhooks across two instances, a crash and a pooler that hangs', () => {
  let direct: string;
  let bouncer: Bouncer;
  let env: Record<string, string>;
  let instances: ServiceProcess[];
  let receiver: Receiver;

  const cli = async (...args: string[]) => {
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH, ...env, LOG_LEVEL: 'warn' },
    });
    return stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  };

  beforeAll(async () => {
    direct = await createEmptyTestDatabase();
    bouncer = await startPgBouncer(direct);
    env = {
      DATABASE_URL: bouncer.url,
      DATABASE_DIRECT_URL: direct,
      JWT_SECRET: randomBytes(32).toString('base64url'),
      // Seven attempts, quickly: the flaky receiver never fails one message that often.
      WEBHOOK_RETRY_DELAYS: '100ms,200ms,200ms,300ms,300ms,500ms',
    };
    instances = [await spawnService(env), await spawnService(env)];
    receiver = await startReceiver();
  });
  afterAll(async () => {
    for (const instance of instances ?? []) instance.child.kill('SIGKILL');
    await Promise.all((instances ?? []).map((instance) => instance.exited));
    await receiver?.close();
    await bouncer?.remove();
  });

  it('delivers every acknowledged write, verified, none rolled back; a disabled subscription replays to completion', async () => {
    const [flaky] = await cli('add', receiver.url('/flaky'));
    expect(flaky).toEqual({
      id: expect.any(String),
      url: receiver.url('/flaky'),
      events: ['bike.created', 'bike.updated', 'bike.deleted'],
      secret: expect.stringMatching(/^whsec_/),
    });
    let hung = false;
    receiver.route('/flaky', [flaky.secret as string], ({ webhookId, attempts }) => {
      if (!hung) {
        hung = true;
        return 'hang';
      }
      const n = Number(webhookId.split('_').pop());
      return attempts === 1 && n % 4 === 0 ? 'fail' : 'ok';
    });
    const [down] = await cli('add', receiver.url('/down'), '--events', 'bike.created,bike.deleted');
    let downIsUp = false;
    receiver.route('/down', [down.secret as string], () => (downIsUp ? 'ok' : 'fail'));

    const alive = [...instances];
    const token = await issueToken(instances[0].baseUrl);
    const expected: Expected[] = [];
    /** A write, through an instance still alive; acknowledged only by a 200. */
    const write = async (i: number, method: string, path: string, body?: unknown) => {
      const api = client(alive[i % alive.length].baseUrl, token);
      try {
        const res = await api.request(method, path, { body });
        return res.status === 200 ? ((await res.json()) as Bike) : undefined;
      } catch {
        return undefined;
      }
    };
    let stop = false;
    const writers = Array.from({ length: 16 }, async (_, w) => {
      for (let i = 0; !stop || i < 6; i++) {
        const created = await write(w + i, 'POST', '/bikes', newBike({ title: `Webhook ${w} ${i}` }));
        if (!created) continue;
        expected.push({ type: 'bike.created', data: created });
        const patched = await write(w + i + 1, 'PATCH', `/bikes/${created.id}`, { totalInventory: w * 1000 + i });
        if (patched) expected.push({ type: 'bike.updated', data: patched });
        if (i % 3 === 0 && (await write(w + i, 'DELETE', `/bikes/${created.id}`))) {
          expected.push({ type: 'bike.deleted', data: { id: created.id } });
        }
        if (i > 200) break;
      }
    });

    // Once the flaky receiver has had some, the instance delivering to it is killed.
    await waitFor('a few deliveries', () => (receiver.delivered('/flaky').size >= 20 ? true : undefined));
    const sql = new Client({ connectionString: direct });
    await sql.connect();
    try {
      const holder = await waitFor('the lease holder', async () => {
        const { rows } = await sql.query<{ lease_holder: string | null }>(
          'SELECT lease_holder FROM webhook_subscriptions WHERE id = $1',
          [flaky.id],
        );
        return rows[0]?.lease_holder ?? undefined;
      });
      const victim = instances.find((instance) => holder.split(':')[1] === String(instance.child.pid))!;
      expect(victim).toBeDefined();
      alive.splice(alive.indexOf(victim), 1);
      victim.child.kill('SIGKILL');
      await victim.exited;

      // PgBouncer hangs a moment, then goes on.
      bouncer.signal('hang');
      await new Promise((resolve) => setTimeout(resolve, 1500));
      bouncer.signal('resume');

      stop = true;
      await Promise.all(writers);
      expect(expected.length).toBeGreaterThan(100);

      // A write rolled back, and one made by SQL by hand.
      // (Once the service has its database back: a write while PgBouncer hung may have answered 503.)
      const kept = await waitFor('a create', () =>
        client(alive[0].baseUrl, token)
          .create(newBike())
          .catch(() => undefined),
      );
      expected.push({ type: 'bike.created', data: kept });
      const rolledBack = `Rolled back ${randomUUID()}`;
      await sql.query('BEGIN');
      await sql.query('UPDATE bikes SET title = $1 WHERE id = $2', [rolledBack, kept.id]);
      await sql.query('ROLLBACK');
      await sql.query('UPDATE bikes SET title = $1 WHERE id = $2', [`By hand ${randomUUID()}`, kept.id]);
      const byHand = (await (await client(alive[0].baseUrl).request('GET', `/bikes/${kept.id}`)).json()) as Bike;
      expected.push({ type: 'bike.updated', data: byHand });

      const flakyWanted = new Set(expected.map(keyOf));
      const received = () =>
        new Set(
          [...receiver.delivered('/flaky').values()].map(({ body }) => keyOf({ type: body.type, data: body.data })),
        );
      const missingFrom = (got: Set<string>) => [...flakyWanted].filter((key) => !got.has(key));
      await waitFor(
        'every acknowledged write delivered',
        () => (missingFrom(received()).length === 0 ? true : undefined),
        {
          everyMs: 500,
        },
      );
      const bodies = [...receiver.delivered('/flaky').values()].map(({ body }) => body);
      expect(missingFrom(received())).toEqual([]);
      expect(bodies.filter((body) => body.data.title === rolledBack)).toEqual([]);
      expect(receiver.unverified()).toBe(0);
      for (const body of bodies) expect(typeof body.cursor).toBe('string');

      // The receiver that failed every attempt: disabled, and the operator sees why.
      const [listed] = await waitFor('the failing subscription disabled', async () => {
        const listed = (await cli('list')).filter((s) => s.id === down.id);
        return listed[0]?.state === 'disabled' ? listed : undefined;
      });
      expect(listed).toMatchObject({
        url: receiver.url('/down'),
        state: 'disabled',
        reason: expect.stringContaining('500'),
      });
      const attempts = await cli('deliveries', down.id as string, '--limit', '100');
      expect(attempts.length).toBe(7);
      expect(attempts.every((attempt) => attempt.status === 500)).toBe(true);
      // Each instance reads the states for its metrics every second.
      const shown = `webhook_subscriptions{subscription="${down.id}",state="disabled"} 1`;
      const metrics = await waitFor('the metric', async () => {
        const text = await (await fetch(`${alive[0].baseUrl}/metrics`)).text();
        return text.includes(shown) ? text : undefined;
      });
      expect(metrics).toContain(shown);

      // Replayed once its receiver is back: from the first change it had not had, to the last.
      downIsUp = true;
      expect(await cli('replay', down.id as string)).toEqual([{ replaying: down.id, from: 'where it stands' }]);
      const downWanted = expected.filter((e) => e.type !== 'bike.updated').map(keyOf);
      await waitFor(
        'the replay to complete',
        () => {
          const got = new Set(
            [...receiver.delivered('/down').values()].map(({ body }) => keyOf({ type: body.type, data: body.data })),
          );
          return downWanted.every((key) => got.has(key)) ? true : undefined;
        },
        { everyMs: 500 },
      );
      const downTypes = new Set([...receiver.delivered('/down').values()].map(({ body }) => body.type));
      expect(downTypes.has('bike.updated')).toBe(false);
    } finally {
      await sql.end();
    }
  });
});
