import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import type { Bike } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import { type LogPosition, pruneUntilPast } from '../support/pruning';
import { startTestService, type TestService } from '../support/service';
import { waitFor } from '../support/wait';
import { type Receiver, startReceiver } from '../support/webhook-receiver';

const CLI = path.join(__dirname, '..', '..', 'dist', 'cli', 'webhooks.js');

/**
 * The operator's command, npm run webhooks (docs/webhooks.md#subscriptions), against a running
 * service: each change it makes is seen by the service without a restart.
 */
describe('npm run webhooks', () => {
  let svc: TestService;
  let receiver: Receiver;
  let api: ReturnType<typeof client>;

  const run = async (...args: string[]) => {
    try {
      const { stdout } = await promisify(execFile)(process.execPath, [CLI, ...args], {
        env: { PATH: process.env.PATH, DATABASE_URL: svc.databaseUrl, JWT_SECRET: svc.jwtSecret, LOG_LEVEL: 'warn' },
      });
      return {
        code: 0,
        lines: stdout
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as Record<string, unknown>),
      };
    } catch (err) {
      const failed = err as { code: number; stderr: string };
      return { code: failed.code, lines: [], stderr: failed.stderr };
    }
  };

  beforeAll(async () => {
    svc = await startTestService({ env: { WEBHOOK_RETRY_DELAYS: '50ms' } });
    receiver = await startReceiver();
    api = client(svc.baseUrl, await svc.token());
  });
  afterAll(async () => {
    await svc?.stop();
    await receiver?.close();
  });

  it('refuses a URL that is not http or https, and an unknown event, with its usage (exit 2)', async () => {
    for (const args of [
      ['add', 'ftp://example.com/'],
      ['add', 'not a url'],
      ['add', 'http://user:pw@example.com/'],
      ['add', 'http://example.com/', '--events', 'bike.renamed'],
      ['remove', 'not-a-uuid'],
      ['frobnicate'],
    ]) {
      const result = await run(...args);
      expect(result).toMatchObject({ code: 2, stderr: expect.stringContaining('usage: npm run -s webhooks') });
    }
    expect(await run('remove', '00000000-0000-4000-8000-000000000000')).toMatchObject({ code: 1 });
  });

  it('adds, rotates (both secrets sign for a while), lists, shows deliveries, replays from a cursor, removes', async () => {
    const {
      lines: [added],
    } = await run('add', receiver.url('/cli'), '--events', 'bike.created');
    expect(added).toMatchObject({
      url: receiver.url('/cli'),
      events: ['bike.created'],
      secret: expect.stringMatching(/^whsec_/),
    });
    const oldSecret = added.secret as string;
    receiver.route('/cli', [oldSecret], () => 'ok');
    const first = await api.create(newBike());
    await api.request('PATCH', `/bikes/${first.id}`, { body: { totalInventory: 3 } });
    const arrived = await waitFor('the create', () =>
      [...receiver.delivered('/cli').values()].find(({ body }) => body.data.id === first.id),
    );
    expect(arrived.body).toEqual({
      type: 'bike.created',
      timestamp: expect.any(String),
      data: first,
      cursor: expect.any(String),
    });

    // Rotated: the receiver verifying with the new secret alone, then with the old alone, gets each.
    const {
      lines: [rotated],
    } = await run('rotate-secret', added.id as string, '--keep', '1h');
    expect(rotated).toMatchObject({
      id: added.id,
      secret: expect.stringMatching(/^whsec_/),
      previousSecretUntil: expect.any(String),
    });
    expect(rotated.secret).not.toBe(oldSecret);
    const seen = receiver.delivered('/cli').size;
    receiver.route('/cli', [rotated.secret as string], () => 'ok');
    // A delivery signed before the rotation was read, refused by the new secret alone, would come again: wait for one that is new.
    for (const secrets of [[rotated.secret as string], [oldSecret]]) {
      receiver.route('/cli', secrets, () => 'ok');
      const bike: Bike = await api.create(newBike());
      await waitFor('a create signed with both', () =>
        [...receiver.delivered('/cli').values()].some(({ body }) => body.data.id === bike.id) ? true : undefined,
      );
    }
    expect(receiver.delivered('/cli').size).toBeGreaterThan(seen);
    const updates = [...receiver.delivered('/cli').values()].filter(({ body }) => body.type !== 'bike.created');
    expect(updates).toEqual([]);

    const { lines: listed } = await run('list');
    expect(listed.find((s) => s.id === added.id)).toMatchObject({
      state: 'active',
      events: ['bike.created'],
      reason: null,
    });
    expect(JSON.stringify(listed)).not.toContain('whsec_');
    const { lines: attempts } = await run('deliveries', added.id as string);
    expect(attempts[0]).toMatchObject({ event: 'bike.created', status: 204, attempt: 1, error: null });

    // Replayed from the first create's cursor: everything after it comes again, the same ids.
    const before = new Map(receiver.delivered('/cli'));
    const { code } = await run('replay', added.id as string, '--from', arrived.body.cursor);
    expect(code).toBe(0);
    const later = [...before.values()].filter(({ body }) => body.data.id !== first.id);
    expect(later.length).toBeGreaterThan(0);
    await waitFor('the changes after the cursor sent again', () =>
      later.every(({ webhookId }) => receiver.attempts('/cli', webhookId) >= 2) ? true : undefined,
    );
    expect(receiver.attempts('/cli', arrived.webhookId)).toBe(1);
    // The receiver deduplicates by webhook-id: a replay is the same messages.
    expect([...receiver.delivered('/cli').keys()].sort()).toEqual([...before.keys()].sort());

    expect(await run('remove', added.id as string)).toMatchObject({ code: 0, lines: [{ removed: added.id }] });
    expect((await run('list')).lines.some((s) => s.id === added.id)).toBe(false);
    expect(receiver.unverified()).toBe(0);
  });

  it('a subscription pruning has passed is marked behind, says why, and replays from a time', async () => {
    const {
      lines: [added],
    } = await run('add', receiver.url('/behind'));
    let up = false;
    receiver.route('/behind', [added.secret as string], () => (up ? 'ok' : 'fail'));
    const bike = await api.create(newBike());
    await waitFor('the subscription disabled', async () =>
      (await run('list')).lines.some((s) => s.id === added.id && s.state === 'disabled') ? true : undefined,
    );
    // Its change, and every one before it, older than the retention, and pruned past.
    const db = new Client({ connectionString: svc.databaseUrl });
    await db.connect();
    try {
      const {
        rows: [last],
      } = await db.query<LogPosition>(
        `SELECT txid::text, change_id::text FROM bike_changes WHERE bike_id = $1 ORDER BY txid DESC, change_id DESC LIMIT 1`,
        [bike.id],
      );
      await db.query(
        `UPDATE bike_changes SET changed_at = now() - interval '40 days' WHERE (txid, change_id) <= ($1::bigint, $2::bigint)`,
        [last.txid, last.change_id],
      );
      await pruneUntilPast(db, `now() - interval '30 days'`, last);
    } finally {
      await db.end();
    }
    expect((await run('list')).lines.find((s) => s.id === added.id)).toMatchObject({ prunedPast: true });

    // Replayed from where it stands: it cannot go on without a gap, and says so.
    up = true;
    expect((await run('replay', added.id as string)).code).toBe(0);
    const behind = await waitFor('the subscription behind', async () =>
      (await run('list')).lines.find((s) => s.id === added.id && s.state === 'behind'),
    );
    expect(behind.reason).toEqual(expect.stringContaining('pruned past its position'));
    // Each instance reads the states for its metrics every second.
    const shown = `webhook_subscriptions{subscription="${added.id}",state="behind"} 1`;
    const metrics = await waitFor('the metric', async () => {
      const text = await (await fetch(`${svc.baseUrl}/metrics`)).text();
      return text.includes(shown) ? text : undefined;
    });
    expect(metrics).toContain(shown);

    // From a time before it: what the log keeps, the bike's latest change.
    const from = new Date(Date.now() - 41 * 24 * 3600 * 1000).toISOString();
    expect((await run('replay', added.id as string, '--from', from)).code).toBe(0);
    const arrived = await waitFor('the kept change', () =>
      [...receiver.delivered('/behind').values()].find(({ body }) => body.data.id === bike.id),
    );
    expect(arrived.body).toMatchObject({ type: 'bike.created', data: bike });
    expect((await run('list')).lines.find((s) => s.id === added.id)).toMatchObject({
      state: 'active',
      prunedPast: false,
    });
  });
});
