import type { Bike } from '../../src/bikes/bike';
import { newBike } from '../support/bikes';
import { createTestDatabase } from '../support/databases';
import { countStatements, type StatementCounter } from '../support/statement-counter';
import { startTestService, type TestService } from '../support/service';
import { rawRequest } from './helpers';

/**
 * One round trip per write (docs/reference/database.md#prisma-client, #conditional-writes): on the happy
 * path each write is one statement, its preconditions in it; only a write that matched nothing
 * looks at the bike. The abuse limit adds none of its own (docs/reference/callers.md#abuse-limits). Counted
 * by a proxy that reads the statements the service sends, as pg_stat_statements would.
 */
describe('statements per request', () => {
  let counter: StatementCounter;
  let svc: TestService;
  let token: string;

  beforeAll(async () => {
    counter = await countStatements(await createTestDatabase());
    svc = await startTestService({ databaseUrl: counter.url });
    token = await svc.token();
  });
  afterAll(async () => {
    await svc.stop();
    await counter.close();
  });

  /** The statements on the catalog's tables that `request` cost (background ones, such as the limits' flush, aside). */
  async function statementsOf(request: () => Promise<unknown>): Promise<string[]> {
    counter.reset();
    await request();
    return counter.statements().filter((text) => /"?\b(bikes|idempotency_keys)\b"?/.test(text));
  }
  const send = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    rawRequest(
      svc.baseUrl,
      method,
      path,
      { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      body === undefined ? undefined : JSON.stringify(body),
    );
  async function created(): Promise<{ bike: Bike; etag: string }> {
    const reply = await send('POST', '/bikes/', newBike());
    return { bike: JSON.parse(reply.text) as Bike, etag: reply.headers.etag as string };
  }

  it('a create, with or without an Idempotency-Key, is one statement', async () => {
    expect(await statementsOf(() => send('POST', '/bikes/', newBike()))).toHaveLength(1);
    expect(
      await statementsOf(() => send('POST', '/bikes/', newBike(), { 'idempotency-key': 'one-trip' })),
    ).toHaveLength(1);
  });

  it('a conditional PATCH, PUT or DELETE that holds is one statement; one that fails looks at the bike once more', async () => {
    const { bike, etag } = await created();
    const patched = await statementsOf(async () => {
      const reply = await send('PATCH', `/bikes/${bike.id}`, { vendor: 'x' }, { 'if-match': etag });
      expect(reply.status).toBe(200);
    });
    expect(patched).toHaveLength(1);
    const stale = await statementsOf(async () => {
      const reply = await send('PATCH', `/bikes/${bike.id}`, { vendor: 'y' }, { 'if-match': etag });
      expect(reply.status).toBe(412);
    });
    expect(stale).toHaveLength(2);
    const current = (await rawRequest(svc.baseUrl, 'GET', `/bikes/${bike.id}`, {})).headers.etag as string;
    const replacement = { ...newBike(), id: bike.id, handle: 'h' };
    expect(await statementsOf(() => send('PUT', `/bikes/${bike.id}`, replacement))).toHaveLength(1);
    const now = (await rawRequest(svc.baseUrl, 'GET', `/bikes/${bike.id}`, {})).headers.etag as string;
    expect(now).not.toBe(current);
    expect(await statementsOf(() => send('PUT', `/bikes/${bike.id}`, replacement, { 'if-match': now }))).toHaveLength(
      1,
    );
    const last = (await rawRequest(svc.baseUrl, 'GET', `/bikes/${bike.id}`, {})).headers.etag as string;
    expect(await statementsOf(() => send('DELETE', `/bikes/${bike.id}`, undefined, { 'if-match': last }))).toHaveLength(
      1,
    );
  });

  /** Every statement `request` cost, the service's background ones (limits, identity, health) aside. */
  async function allStatementsOf(request: () => Promise<unknown>): Promise<string[]> {
    counter.reset();
    await request();
    return counter
      .statements()
      .filter((text) => !/rate_limits|catalog_identity|_prisma_migrations|^SELECT 1$|pg_backend_pid/.test(text));
  }

  it('a search that fits in one batch is one statement, no transaction; a 304 of the list reads its version alone, no row', async () => {
    const { bike } = await created();
    const search = await allStatementsOf(async () => {
      const reply = await rawRequest(
        svc.baseUrl,
        'GET',
        `/bikes/search/by-title?query=${encodeURIComponent(bike.title)}`,
        {},
      );
      expect(JSON.parse(reply.text)).toEqual([bike]);
    });
    expect(search).toHaveLength(1);
    const tag = (await rawRequest(svc.baseUrl, 'GET', '/bikes/all', {})).headers.etag as string;
    const revalidated = await allStatementsOf(async () => {
      expect((await rawRequest(svc.baseUrl, 'GET', '/bikes/all', { 'if-none-match': tag })).status).toBe(304);
    });
    expect(revalidated).toHaveLength(1);
    expect(revalidated[0]).not.toMatch(/from "bikes"/);
  });

  it('a hundred writes add no statement each for the abuse limit: its counts go in batches', async () => {
    counter.reset();
    const started = Date.now();
    for (let i = 0; i < 100; i++) expect((await send('POST', '/bikes/', newBike())).status).toBe(200);
    const flushes = counter.statements().filter((text) => text.includes('rate_limits'));
    // At most one flush every 250 ms (and one more at each end), however long the writes took here.
    expect(flushes.length).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / 250) + 2);
  });
});
