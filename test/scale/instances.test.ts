import { randomBytes } from 'node:crypto';
import type { Bike } from '../../src/bikes/bike';
import { client, issueToken, newBike } from '../support/bikes';
import { createTestDatabase } from '../support/databases';
import { spawnService, type ServiceProcess } from '../support/process';

/**
 * Two service processes on one database, as behind a load balancer: writes and reads
 * interleaved across both, and every committed write seen by both.
 */
describe('two service processes on one database', () => {
  let instances: ServiceProcess[];
  let apis: ReturnType<typeof client>[];

  beforeAll(async () => {
    const env = { DATABASE_URL: await createTestDatabase(), JWT_SECRET: randomBytes(32).toString('base64url') };
    instances = await Promise.all([spawnService(env), spawnService(env)]);
    const token = await issueToken(instances[0].baseUrl);
    // A token from one instance is good on the other: they share the secret.
    apis = instances.map((instance) => client(instance.baseUrl, token));
  });
  afterAll(async () => {
    for (const instance of instances ?? []) instance.child.kill('SIGTERM');
    await Promise.all((instances ?? []).map((instance) => instance.exited));
  });

  it('interleaves creates, patches, deletes and reads across both: nothing lost, no 5xx, each sees every write', async () => {
    const statuses: number[] = [];
    const expected = new Map<string, Bike | null>();
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const writer = apis[i % 2];
        const other = apis[(i + 1) % 2];
        const created = await writer.create(newBike());
        // The other instance sees the create at once.
        const seen = await other.request('GET', `/bikes/${created.id}`);
        statuses.push(seen.status);
        expect(await seen.json()).toEqual(created);

        const patched = await other.request('PATCH', `/bikes/${created.id}`, { body: { totalInventory: i } });
        statuses.push(patched.status);
        let final: Bike | null = (await patched.json()) as Bike;
        if (i % 4 === 0) {
          const deleted = await writer.request('DELETE', `/bikes/${created.id}`);
          statuses.push(deleted.status);
          final = null;
        }
        expected.set(created.id, final);
      }),
    );
    expect(statuses.filter((status) => status !== 200)).toEqual([]);

    for (const api of apis) {
      const all = (await (await api.request('GET', '/bikes/all')).json()) as Bike[];
      const byId = new Map(all.map((bike) => [bike.id, bike]));
      for (const [id, bike] of expected) expect(byId.get(id) ?? null).toEqual(bike);
      for (const [id, bike] of expected) {
        const res = await api.request('GET', `/bikes/${id}`);
        expect(res.status).toBe(bike ? 200 : 404);
      }
    }
  });
});
