import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { operatorToken } from '../../src/auth/tokens';
import type { Bike } from '../../src/bikes/bike';
import { newBike } from '../support/bikes';
import { startTestService, type TestService } from '../support/service';
import { type RawReply, rawRequest } from './helpers';

/**
 * Idempotency-Key on POST /bikes/ (docs/reference/caching-and-conditions.md#idempotency-keys): a create retried with its
 * key makes one bike, whichever instance the retry reaches and whatever became of the first try;
 * a key is its client's own.
 */

describe('POST /bikes/ with an Idempotency-Key', () => {
  let first: TestService;
  let second: TestService;
  let token: string;
  let sql: Client;

  beforeAll(async () => {
    first = await startTestService();
    // A second instance on the same database, signing with the same secret.
    second = await startTestService({ databaseUrl: first.databaseUrl, jwtSecret: first.jwtSecret });
    token = await first.token();
    sql = new Client({ connectionString: first.databaseUrl });
    await sql.connect();
  });
  afterAll(async () => {
    await sql.end();
    await second.stop();
    await first.stop();
  });

  const post = (svc: TestService, key: string | undefined, body: unknown, as = token): Promise<RawReply> =>
    rawRequest(
      svc.baseUrl,
      'POST',
      '/bikes/',
      {
        authorization: `Bearer ${as}`,
        'content-type': 'application/json',
        ...(key !== undefined && { 'idempotency-key': key }),
      },
      JSON.stringify(body),
    );
  const bikesTitled = async (title: string) =>
    Number((await sql.query('SELECT count(*) FROM bikes WHERE title = $1', [title])).rows[0].count);

  it('a retry with the same key and fields answers the same 200 and body, marked as a replay, and creates nothing', async () => {
    const key = randomUUID();
    const fields = newBike();
    const once = await post(first, key, fields);
    expect(once.status).toBe(200);
    expect(once.headers['idempotent-replayed']).toBeUndefined();
    const again = await post(second, key, fields);
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.toString('utf8')).toBe(once.body.toString('utf8'));
    expect(again.headers.etag).toBe(once.headers.etag);
    expect(await bikesTitled(fields.title)).toBe(1);
  });

  it('a retry that adds fields the bike does not have is the same create: they are ignored, so they do not count (a replay, nothing created)', async () => {
    const key = randomUUID();
    const fields = newBike();
    const once = await post(first, key, fields);
    expect(once.status).toBe(200);
    const again = await post(first, key, { ...fields, color: 'red', priceRange: { ...fields.priceRange, tax: 7 } });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.toString('utf8')).toBe(once.body.toString('utf8'));
    expect(await bikesTitled(fields.title)).toBe(1);
  });

  it('the same key with other fields is 422 and creates nothing', async () => {
    const key = randomUUID();
    const fields = newBike();
    expect((await post(first, key, fields)).status).toBe(200);
    const other = newBike();
    const reply = await post(first, key, other);
    expect(reply.status).toBe(422);
    expect(reply.body.toString('utf8')).toBe('Unprocessable Entity');
    expect(await bikesTitled(other.title)).toBe(0);
  });

  it("a key is its client's own: another client with the same key and fields creates its own bike, and one that took a key first with junk does not block the real create", async () => {
    const key = 'order-1';
    const fields = newBike();
    const alice = await first.token('alice');
    const mallory = await first.token('mallory');
    // Mallory takes the guessable key first, with other fields.
    expect((await post(first, key, newBike(), mallory)).status).toBe(200);
    const real = await post(second, key, fields, alice);
    expect(real.status).toBe(200);
    expect(real.headers['idempotent-replayed']).toBeUndefined();
    // Another client sending the same key and the same fields gets a bike of its own, not alice's answer.
    const copy = await post(first, key, fields, mallory);
    expect(copy.status).toBe(422);
    const bob = await first.token('bob');
    const theirs = await post(first, key, fields, bob);
    expect(theirs.status).toBe(200);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(JSON.parse(theirs.body.toString('utf8')).id).not.toBe(JSON.parse(real.body.toString('utf8')).id);
    // Alice's own retry, with a new token, replays her create.
    const retried = await post(first, key, fields, await first.token('alice'));
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.body.toString('utf8')).toBe(real.body.toString('utf8'));
    expect(await bikesTitled(fields.title)).toBe(2);
  });

  /** A token of POST /api/user without a username. */
  async function anonymousToken(svc: TestService): Promise<string> {
    const res = await fetch(`${svc.baseUrl}/api/user`, { method: 'POST' });
    expect(res.status).toBe(200);
    return ((await res.json()) as { token: string }).token;
  }

  it('an anonymous retry with a renewed token replays the create rather than making a second bike', async () => {
    const key = randomUUID();
    const fields = newBike();
    const once = await post(first, key, fields, await anonymousToken(first));
    expect(once.status).toBe(200);
    const renewed = await anonymousToken(second);
    const again = await post(second, key, fields, renewed);
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.toString('utf8')).toBe(once.body.toString('utf8'));
    expect(await bikesTitled(fields.title)).toBe(1);
  });

  it('every anonymous token shares one scope, as every token claiming one name does: a key known to another is replayed to it, or 422 with other fields', async () => {
    const key = randomUUID();
    const fields = newBike();
    expect((await post(first, key, fields, await anonymousToken(first))).status).toBe(200);
    const stranger = await anonymousToken(first);
    expect((await post(first, key, fields, stranger)).headers['idempotent-replayed']).toBe('true');
    expect((await post(first, key, newBike(), stranger)).status).toBe(422);
    // A token with a name (an empty one included) is not anonymous.
    for (const name of ['', 'anonymous']) {
      const named = await post(first, key, fields, await first.token(name));
      expect(named.status).toBe(200);
      expect(named.headers['idempotent-replayed']).toBeUndefined();
    }
    expect(await bikesTitled(fields.title)).toBe(3);
  });

  // Proven or claimed, the caller is as authentication names it (docs/reference/callers.md#who-a-caller-is).
  it("a proven caller's keys are its own: the operator's token for alice shares none with a token claiming alice, and a renewed one replays", async () => {
    const key = randomUUID();
    const fields = newBike();
    const claimed = await post(first, key, fields, await first.token('alice'));
    expect(claimed.status).toBe(200);
    const proven = await post(first, key, fields, operatorToken(first.jwtSecret, 'alice', 600));
    expect(proven.status).toBe(200);
    expect(proven.headers['idempotent-replayed']).toBeUndefined();
    expect(JSON.parse(proven.body.toString('utf8')).id).not.toBe(JSON.parse(claimed.body.toString('utf8')).id);
    const renewed = await post(second, key, fields, operatorToken(first.jwtSecret, 'alice', 600));
    expect(renewed.headers['idempotent-replayed']).toBe('true');
    expect(renewed.body.toString('utf8')).toBe(proven.body.toString('utf8'));
    expect(await bikesTitled(fields.title)).toBe(2);
  });

  it('many retries at once, on two instances, make one bike: the others get the replay or 409 with Retry-After', async () => {
    const key = randomUUID();
    const fields = newBike();
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => post(i % 2 ? second : first, key, fields)));
    const statuses = replies.map((r) => r.status);
    expect(statuses.every((status) => status === 200 || status === 409)).toBe(true);
    expect(statuses).toContain(200);
    for (const reply of replies.filter((r) => r.status === 409)) expect(reply.headers['retry-after']).toBe('1');
    expect(await bikesTitled(fields.title)).toBe(1);
    const ids = new Set(
      replies.filter((r) => r.status === 200).map((r) => (JSON.parse(r.body.toString('utf8')) as Bike).id),
    );
    expect(ids.size).toBe(1);
  });

  it('a create held over 5 s by a lock (lock_timeout; the table locked until it answers) is a 503 with Retry-After that committed nothing, never a 500: its retry makes the one bike', async () => {
    const key = randomUUID();
    const fields = newBike();
    const holder = new Client({ connectionString: first.databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE bikes IN ACCESS EXCLUSIVE MODE');
      const refused = await post(first, key, fields);
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.headers['write-outcome']).toBeUndefined();
      await holder.query('ROLLBACK');
    } finally {
      await holder.end();
    }
    expect(await bikesTitled(fields.title)).toBe(0);
    const retried = await post(second, key, fields);
    expect(retried.status).toBe(200);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect(await bikesTitled(fields.title)).toBe(1);
  });

  it('a create whose connection the client cut is either done or not, and its retry leaves exactly one bike', async () => {
    const key = randomUUID();
    const fields = newBike();
    const cut = new AbortController();
    const sent = fetch(`${first.baseUrl}/bikes/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(fields),
      signal: cut.signal,
    }).catch(() => undefined);
    cut.abort();
    await sent;
    const retried = await post(second, key, fields);
    // 409 while the first is still running, however long that takes here: the client retries again.
    let status = retried.status;
    while (status === 409) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await post(second, key, fields)).status;
    }
    expect(status).toBe(200);
    expect(await bikesTitled(fields.title)).toBe(1);
  });

  it('refuses a key that is not one with 400, and without a key every POST creates', async () => {
    const fields = newBike();
    for (const key of ['', 'a'.repeat(256), 'two,keys', 'with space']) {
      expect({ key, status: (await post(first, key, fields)).status }).toEqual({ key, status: 400 });
    }
    expect(await bikesTitled(fields.title)).toBe(0);
    expect((await post(first, undefined, fields)).status).toBe(200);
    expect((await post(first, undefined, fields)).status).toBe(200);
    expect(await bikesTitled(fields.title)).toBe(2);
  });

  it('keeps the key in PostgreSQL with the bike, so it outlives the instance that took it', async () => {
    const key = randomUUID();
    const fields = newBike();
    const once = await post(first, key, fields);
    const { rows } = await sql.query('SELECT bike_id FROM idempotency_keys WHERE key = $1', [key]);
    expect(rows).toEqual([{ bike_id: (JSON.parse(once.body.toString('utf8')) as Bike).id }]);
  });
});
