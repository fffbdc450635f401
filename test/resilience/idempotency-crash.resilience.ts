import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { newBike } from '../support/bikes';
import { createTestDatabase } from '../support/databases';
import { type ServiceProcess, spawnService } from '../support/process';

/**
 * Idempotency-Key across a crash (docs/reference/caching-and-conditions.md#idempotency-keys): creates with keys, the service
 * killed with SIGKILL while they run (some commit and are never answered), then every create
 * retried with its key on the restarted service: each key ends with exactly one bike, and a
 * retry of a create that had committed is answered as a replay of it.
 */

const CREATES = 300;

describe('POST /bikes/ with Idempotency-Key, the service killed with SIGKILL mid-way', () => {
  const running: ServiceProcess[] = [];
  afterAll(async () => {
    for (const service of running) {
      if (service.child.exitCode === null && service.child.signalCode === null) {
        service.child.kill('SIGTERM');
        await service.exited;
      }
    }
  });

  it('leaves exactly one bike per key after the retries, whatever the kill cut', async () => {
    const env = { DATABASE_URL: await createTestDatabase(), JWT_SECRET: randomBytes(32).toString('base64url') };
    const first = await spawnService(env);
    running.push(first);
    const issued = await fetch(`${first.baseUrl}/api/user`, { method: 'POST' });
    const { token } = (await issued.json()) as { token: string };
    const creates = Array.from({ length: CREATES }, () => ({ key: randomUUID(), fields: newBike() }));
    const post = (baseUrl: string, create: (typeof creates)[number]) =>
      fetch(`${baseUrl}/bikes/`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'idempotency-key': create.key,
        },
        body: JSON.stringify(create.fields),
      });

    // Ten at a time; the kill comes once a third have been answered.
    const answered = new Set<string>();
    let next = 0;
    const worker = async () => {
      while (next < creates.length) {
        const create = creates[next++];
        try {
          const res = await post(first.baseUrl, create);
          if (res.status === 200) answered.add(create.key);
        } catch {
          return; // the service is gone
        }
      }
    };
    const workers = Array.from({ length: 10 }, worker);
    while (answered.size < CREATES / 3) await new Promise((resolve) => setTimeout(resolve, 5));
    first.child.kill('SIGKILL');
    await first.exited;
    await Promise.all(workers);

    const second = await spawnService(env);
    running.push(second);
    let replays = 0;
    let replaysOfUnanswered = 0;
    for (const create of creates) {
      const res = await post(second.baseUrl, create);
      expect({ key: create.key, status: res.status }).toEqual({ key: create.key, status: 200 });
      if (res.headers.get('idempotent-replayed') === 'true') {
        replays++;
        if (!answered.has(create.key)) replaysOfUnanswered++;
      }
    }
    const sql = new Client({ connectionString: env.DATABASE_URL });
    await sql.connect();
    try {
      const { rows } = await sql.query<{ title: string; count: string }>(
        'SELECT title, count(*) FROM bikes WHERE title = ANY($1) GROUP BY title',
        [creates.map((create) => create.fields.title)],
      );
      expect(rows.length).toBe(CREATES);
      expect(rows.filter((row) => row.count !== '1')).toEqual([]);
    } finally {
      await sql.end();
    }
    // Every create answered before the kill is a replay now.
    expect(replays).toBeGreaterThanOrEqual(answered.size);
    console.log(
      `idempotency across SIGKILL: ${answered.size} of ${CREATES} answered before the kill; after it, ${replays} retries were replays, ` +
        `${replaysOfUnanswered} of them of creates that had committed without an answer; one bike per key`,
    );
  });
});
