import type { Bike } from '../src/bikes/bike';
import { client, newBike } from './support/bikes';
import { createTestDatabase } from './support/databases';
import { type InjectingProxy, injectingProxy } from './support/injecting-proxy';
import { startTestService, type TestService } from './support/service';
import { waitFor } from './support/wait';

/**
 * A message on a service↔PostgreSQL connection that its state does not expect closes it, before
 * pg hands it to a query (src/pg-conversation.ts): one stray ReadyForQuery made 554 of 2,682
 * creates answer 200 with another request's bike (issue 37).
 */

describe('a stray message slipped into what PostgreSQL sends the service', () => {
  let proxy: InjectingProxy;
  let service: TestService;
  beforeAll(async () => {
    proxy = await injectingProxy(await createTestDatabase());
    service = await startTestService({ databaseUrl: proxy.url });
  });
  afterAll(async () => {
    await service.stop();
    await proxy.close();
  });

  it('while writers create, a ReadyForQuery or another create’s row slipped in never hands a request another’s bike: a create answers 200 with the bike it sent, or 503 or 504; each connection it came on is closed, and the service creates on', async () => {
    const api = client(service.baseUrl, await service.token());
    const statuses: number[] = [];
    const wrong: { sent: string; got: string }[] = [];
    proxy.arm(true);
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 60; i++) {
          const sent = newBike();
          const res = await api.request('POST', '/bikes', { body: sent });
          statuses.push(res.status);
          if (res.status !== 200) continue;
          const got = (await res.json()) as Bike;
          if (got.title !== sent.title) wrong.push({ sent: sent.title, got: got.title });
        }
      }),
    );
    proxy.arm(false);

    expect(proxy.injected()).toEqual({ ready: expect.any(Number), row: expect.any(Number) });
    expect(proxy.injected().ready).toBeGreaterThan(0);
    expect(proxy.injected().row).toBeGreaterThan(0);
    expect(wrong).toEqual([]);
    expect(statuses.filter((status) => ![200, 503, 504].includes(status))).toEqual([]);
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(0);
    await waitFor('every connection a stray message came on to be closed', () =>
      proxy.injectedOpen() === 0 ? true : undefined,
    );
    const sent = newBike();
    const created = await api.create(sent);
    expect(created.title).toBe(sent.title);
  });
});
