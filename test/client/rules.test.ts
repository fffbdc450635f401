import jwt from 'jsonwebtoken';
import {
  type Bike,
  BlockedError,
  ConflictError,
  createCatalogClient,
  type CatalogClientOptions,
  NotFoundError,
  RequestError,
  ServerError,
} from '../../client/src/index.ts';
import { operatorToken } from '../../src/auth/tokens';
import { newBike } from '../support/bikes';
import { freePort } from '../support/process';
import { type ProviderKey, providerKey, startProvider, type TestProvider } from '../support/identity-provider';
import { startTestService, type TestService } from '../support/service';

/**
 * The rules the client carries (docs/clients.md), each against the real service: tokens, If-Match,
 * one Idempotency-Key across a create's retries, pages, compressed bodies, typed errors. Where a
 * test needs an answer lost on the way back, the client's `fetch` sends the request for real and
 * then loses what came back.
 */

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface Sent {
  method: string;
  path: string;
  headers: Headers;
}

/** A fetch that records what it sends; `lose` decides, per request, to lose its answer (after it was sent). */
function recordingFetch(lose: (sent: Sent) => boolean = () => false) {
  const sent: Sent[] = [];
  const send: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const record = { method: request.method, path: url.pathname, headers: request.headers };
    sent.push(record);
    const response = await fetch(request);
    if (lose(record)) {
      await response.arrayBuffer();
      throw new TypeError('fetch failed (the test lost the answer)');
    }
    return response;
  };
  return { sent, fetch: send };
}

describe('the client against the service', () => {
  let svc: TestService;
  const catalogOf = (options: Partial<CatalogClientOptions> = {}) =>
    createCatalogClient({ baseUrl: svc.baseUrl, EventSource: null, ...options });
  const all = async () => (await (await fetch(`${svc.baseUrl}/bikes/all`)).json()) as Bike[];

  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.stop());

  describe('tokens', () => {
    const token = (claims: { iat: number; exp: number }) =>
      jwt.sign({ username: 'shop', ...claims }, svc.jwtSecret, { algorithm: 'HS256' });
    const now = () => Math.floor(Date.now() / 1000);

    it('fetches one from POST /api/user (with the username given) on the first write, and signs every write with it', async () => {
      const { sent, fetch } = recordingFetch();
      const catalog = catalogOf({ fetch, username: 'ann' });
      await catalog.create(newBike());
      await catalog.create(newBike());
      expect(sent.map(({ method, path }) => `${method} ${path}`)).toEqual([
        'POST /api/user',
        'POST /bikes/',
        'POST /bikes/',
      ]);
      const [first, second] = sent.slice(1).map(({ headers }) => headers.get('authorization'));
      expect(second).toBe(first);
      expect(jwt.decode((first as string).split(' ')[1])).toMatchObject({ username: 'ann' });
    });

    it('asks the function it was given, never POST /api/user, and again a quarter of its life before it expires', async () => {
      const { sent, fetch } = recordingFetch();
      const given: string[] = [];
      const catalog = catalogOf({
        fetch,
        token: () => {
          given.push(token({ iat: now(), exp: now() + 12 }));
          return given[given.length - 1];
        },
      });
      // The clock the client and the tokens read stands still unless the test moves it, so that
      // however long a create takes on a busy machine, the renewal comes when the test says.
      let clock = Date.now();
      const stopped = jest.spyOn(Date, 'now').mockImplementation(() => clock);
      try {
        await catalog.create(newBike());
        await catalog.create(newBike());
        expect(given).toHaveLength(1);
        // 12 s of life: renewed from 9 s on.
        clock += 9_500;
        await catalog.create(newBike());
        expect(given).toHaveLength(2);
      } finally {
        stopped.mockRestore();
      }
      expect(sent.map(({ path }) => path)).not.toContain('/api/user');
      expect(sent.map(({ headers }) => headers.get('authorization'))).toEqual(
        [given[0], given[0], given[1]].map((t) => `Bearer ${t}`),
      );
    });

    it('renews a token the service refuses (403) once, and sends the write again with the new one', async () => {
      const tokens = [token({ iat: now() - 100, exp: now() - 50 }), token({ iat: now(), exp: now() + 600 })];
      let asked = 0;
      const catalog = catalogOf({ token: () => tokens[asked++] });
      const bike = await catalog.create(newBike());
      expect(asked).toBe(2);
      expect((await all()).filter(({ id }) => id === bike.id)).toHaveLength(1);
    });

    it('throws, sending nothing, what the function it was given throws', async () => {
      const { sent, fetch } = recordingFetch();
      const catalog = catalogOf({
        fetch,
        token: () => {
          throw new Error('the identity provider is away');
        },
      });
      await expect(catalog.create(newBike())).rejects.toMatchObject({
        name: 'CatalogError',
        message: 'no token: the identity provider is away',
      });
      expect(sent).toEqual([]);
    });

    it('refuses, sending nothing and naming no value, a token that a header cannot carry; one read from a file with its newline is sent', async () => {
      const good = token({ iat: now(), exp: now() + 600 });
      for (const bad of [`${good.slice(0, 20)}\n${good.slice(20)}`, `${good} ${good}`, `${good}\u00e9`]) {
        const { sent, fetch } = recordingFetch();
        const refused = await catalogOf({ fetch, token: bad })
          .create(newBike())
          .catch((err: unknown) => err);
        expect(refused).toBeInstanceOf(BlockedError);
        expect(refused).toMatchObject({ written: 'nothing', status: undefined });
        expect((refused as Error).message).not.toContain(good.slice(0, 20));
        expect(sent).toEqual([]);
      }
      const { sent, fetch } = recordingFetch();
      const bike = await catalogOf({ fetch, token: `${good}\n` }).create(newBike());
      expect(sent.map(({ headers }) => headers.get('authorization'))).toEqual([`Bearer ${good}`]);
      expect((await all()).filter(({ id }) => id === bike.id)).toHaveLength(1);
    });

    it('throws InvalidTokenError, a RequestError (403), when the token it was given is refused again', async () => {
      const catalog = catalogOf({ token: 'not-a-token' });
      const refused = catalog.create(newBike());
      await expect(refused).rejects.toMatchObject({ name: 'InvalidTokenError', status: 403 });
      await expect(refused).rejects.toBeInstanceOf(RequestError);
    });
  });

  describe('update: If-Match from the bike as last read', () => {
    it('throws ConflictError with the current bike when another wrote since; the same call then applies to it', async () => {
      const ann = catalogOf();
      const bob = catalogOf();
      const created = await ann.create(newBike());
      await bob.get(created.id);
      await bob.update(created.id, { vendor: 'Bob' });
      const conflict = await ann.update(created.id, { totalInventory: 5 }).catch((err: unknown) => err);
      expect(conflict).toBeInstanceOf(ConflictError);
      expect((conflict as ConflictError).current).toEqual({ ...created, vendor: 'Bob' });
      expect(await ann.get(created.id)).toEqual({ ...created, vendor: 'Bob' });
      // The conflict read the bike as it is: the same changes now apply to that state.
      expect(await ann.update(created.id, { totalInventory: 5 })).toEqual({
        ...created,
        vendor: 'Bob',
        totalInventory: 5,
      });
    });

    it('given a bike from a list or the feed, applies the changes only to that state of it', async () => {
      const ann = catalogOf();
      const created = await ann.create(newBike());
      const listed = (await all()).find(({ id }) => id === created.id) as Bike;
      const other = catalogOf();
      expect(await other.update(listed, { totalInventory: 1 })).toEqual({ ...created, totalInventory: 1 });
      const stale = await other.update(listed, { totalInventory: 2 }).catch((err: unknown) => err);
      expect(stale).toBeInstanceOf(ConflictError);
      expect((stale as ConflictError).current).toEqual({ ...created, totalInventory: 1 });
      // Nor did the first client's state of it survive the other's write.
      await expect(ann.update(created.id, { vendor: 'x' })).rejects.toBeInstanceOf(ConflictError);
    });

    it('reads a bike it has not read before writing; a missing one is NotFoundError, a bad field RequestError naming it', async () => {
      const { sent, fetch } = recordingFetch();
      const created = await catalogOf().create(newBike());
      const catalog = catalogOf({ fetch });
      await catalog.update(created.id, { title: 'Renamed' });
      const patch = sent.find(({ method }) => method === 'PATCH') as Sent;
      expect(patch.headers.get('if-match')).toMatch(/^"/);
      await expect(catalog.update(crypto.randomUUID(), { title: 'x' })).rejects.toBeInstanceOf(NotFoundError);
      const refused = await catalog
        .update(created.id, { totalInventory: 'many' as unknown as number })
        .catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(RequestError);
      expect(refused).toMatchObject({ status: 400, invalidField: 'totalInventory' });
    });

    it('when the answer to a write is lost and the read after it gets none either, says its outcome is unknown', async () => {
      const bike = await catalogOf().create(newBike());
      let patched = false;
      const { fetch } = recordingFetch(({ method }) => {
        if (method !== 'PATCH') return method === 'GET' && patched;
        const first = !patched;
        patched = true;
        return first;
      });
      const failed = await catalogOf({ fetch })
        .update(bike.id, { totalInventory: 41 })
        .catch((err: unknown) => err);
      expect(failed).toBeInstanceOf(ServerError);
      expect(failed).toMatchObject({ written: 'unknown' });
      expect((failed as Error).message).toMatch(/^PATCH \/bikes\/\S+: its outcome is unknown, and GET /);
      // The first attempt was applied.
      expect((await all()).find(({ id }) => id === bike.id)?.totalInventory).toBe(41);
    });

    it('delete: keeps a bike changed since it was read (ConflictError); a second delete is NotFoundError', async () => {
      const ann = catalogOf();
      const created = await ann.create(newBike());
      await catalogOf().update(created.id, { vendor: 'Changed' });
      await expect(ann.delete(created.id)).rejects.toBeInstanceOf(ConflictError);
      await ann.delete(created.id);
      await expect(ann.delete(created.id)).rejects.toBeInstanceOf(NotFoundError);
      await expect(ann.get(created.id)).rejects.toBeInstanceOf(NotFoundError);
    });
  });

  describe('create: one Idempotency-Key across its retries', () => {
    it('makes one bike when the answer to the first attempt is lost, and answers it', async () => {
      let lost = false;
      const { sent, fetch } = recordingFetch((request) => request.path === '/bikes/' && !lost && (lost = true));
      const catalog = catalogOf({ fetch });
      const fields = newBike();
      const bike = await catalog.create(fields);
      expect((await all()).filter(({ title }) => title === fields.title)).toEqual([bike]);
      const keys = sent.filter(({ path }) => path === '/bikes/').map(({ headers }) => headers.get('idempotency-key'));
      expect(keys).toHaveLength(2);
      expect(keys[0]).toMatch(UUID_V4);
      expect(keys[1]).toBe(keys[0]);
    });

    it('after a 504 (Write-Outcome: unknown), reads the bike in Content-Location: there, it is the answer, and nothing is sent again', async () => {
      const sent: string[] = [];
      const catalog = catalogOf({
        fetch: async (input, init) => {
          const request = new Request(input, init);
          sent.push(`${request.method} ${new URL(request.url).pathname}`);
          const response = await fetch(request);
          if (request.method !== 'POST' || !request.url.endsWith('/bikes/')) return response;
          // The service made it; the answer on the way back became a 504, as PgBouncer's loss would make it.
          const { id } = (await response.json()) as Bike;
          return new Response('Gateway Timeout', {
            status: 504,
            headers: { 'Write-Outcome': 'unknown', 'Content-Location': `/bikes/${id}` },
          });
        },
      });
      const fields = newBike();
      const bike = await catalog.create(fields);
      expect((await all()).filter(({ title }) => title === fields.title)).toEqual([bike]);
      expect(sent.filter((line) => line === 'POST /bikes/')).toHaveLength(1);
      expect(sent).toContain(`GET /bikes/${bike.id}`);
    });

    it('gives up after its attempts with ServerError (outcome unknown, and the key); the key then answers the one bike made', async () => {
      const { fetch } = recordingFetch((request) => request.path === '/bikes/');
      // A key is the username's (docs/reference/caching-and-conditions.md#idempotency-keys): another client of that name may use it.
      const catalog = catalogOf({ fetch, attempts: 3, username: 'shop' });
      const fields = newBike();
      const failed = await catalog.create(fields).catch((err: unknown) => err);
      expect(failed).toBeInstanceOf(ServerError);
      expect(failed).toMatchObject({ written: 'unknown', idempotencyKey: expect.stringMatching(UUID_V4) });
      const { idempotencyKey } = failed as ServerError;
      const bike = await catalogOf({ username: 'shop' }).create(fields, { idempotencyKey });
      expect((await all()).filter(({ title }) => title === fields.title)).toEqual([bike]);
      // Another create of the same fields is another bike: each create has a key of its own.
      await catalogOf().create(fields);
      expect((await all()).filter(({ title }) => title === fields.title)).toHaveLength(2);
    });
  });

  it('a read that gets no answer gives up after 3 lost connections: its outcome is never unknown, and it says to look at the service', async () => {
    const { sent, fetch } = recordingFetch();
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const failed = await createCatalogClient({ baseUrl: nobody, fetch, EventSource: null })
      .get(crypto.randomUUID())
      .catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(ServerError);
    expect(failed).toMatchObject({ written: 'nothing', status: undefined });
    expect((failed as Error).message).toMatch(
      /not settled in 3 attempts, the last no answer .*; the service is down, or not reachable from here$/,
    );
    expect((failed as Error).message).not.toContain('unknown');
    expect(sent).toHaveLength(3);
  });

  it('api: any other call, typed by the document, its writes signed with the token', async () => {
    const catalog = catalogOf();
    const bike = await catalog.create(newBike());
    const replacement = { ...newBike(), id: bike.id, handle: 'replaced' };
    const { data, response } = await catalog.api.PUT('/bikes/{id}', {
      params: { path: { id: bike.id } },
      body: replacement,
    });
    expect(response.status).toBe(200);
    expect(data).toEqual(replacement);
  });

  it('pages: follows Link to the last page, in the order asked for', async () => {
    const vendor = `Pager ${crypto.randomUUID()}`;
    const catalog = catalogOf();
    const prices = [900, 100, 500, 300, 700];
    for (const amount of prices) {
      const price = { amount, currencyCode: 'EUR' };
      await catalog.create(newBike({ vendor, priceRange: { minPrice: price, maxPrice: price } }));
    }
    const pages: Bike[][] = [];
    for await (const page of catalog.pages({ vendor }, 'price', { limit: 2 })) pages.push(page);
    expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
    expect(pages.flat().map((bike) => bike.priceRange.minPrice.amount)).toEqual([100, 300, 500, 700, 900]);
  });

  it('compress: sends write bodies gzip-compressed (the token request too), which the service takes', async () => {
    const { sent, fetch } = recordingFetch();
    const catalog = catalogOf({ fetch, compress: true, username: 'gzip' });
    const fields = newBike();
    const bike = await catalog.create(fields);
    expect(await catalog.update(bike, { totalInventory: 2 })).toEqual({ ...bike, totalInventory: 2 });
    const writes = sent.filter(({ method }) => method === 'POST' || method === 'PATCH');
    expect(writes.map(({ headers }) => headers.get('content-encoding'))).toEqual(['gzip', 'gzip', 'gzip']);
    expect((await all()).filter(({ title }) => title === fields.title)).toEqual([{ ...bike, totalInventory: 2 }]);
  });
});

describe('the client where the operator has closed POST /api/user (TOKEN_ISSUANCE=closed)', () => {
  let provider: TestProvider;
  let key: ProviderKey;
  let svc: TestService;

  beforeAll(async () => {
    key = await providerKey('ES256');
    provider = await startProvider([key]);
    svc = await startTestService({ env: { TOKEN_ISSUANCE: 'closed', ...provider.env } });
  });
  afterAll(async () => {
    await svc.stop();
    await provider.stop();
  });

  it('without a token of its own, refuses to write and says to give it one; nothing is written', async () => {
    const catalog = createCatalogClient({ baseUrl: svc.baseUrl });
    const refused = await catalog.create(newBike()).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(RequestError);
    expect(refused).toMatchObject({ status: 403, message: expect.stringContaining('`token`') });
    expect(await (await fetch(`${svc.baseUrl}/bikes/all`)).json()).toEqual([]);
  });

  it.each([
    ['the operator issued (npm run token)', () => operatorToken(svc.jwtSecret, 'shop', 600)],
    ["the shop's identity provider signed", () => key.sign()],
  ])('writes with tokens %s, never asking POST /api/user', async (_, token) => {
    const { sent, fetch } = recordingFetch();
    const catalog = createCatalogClient({ baseUrl: svc.baseUrl, token, fetch });
    const bike = await catalog.create(newBike());
    expect(await catalog.update(bike.id, { totalInventory: 1 })).toEqual({ ...bike, totalInventory: 1 });
    await catalog.delete(bike.id);
    expect(sent.map(({ method, path }) => `${method} ${path}`)).toEqual([
      'POST /bikes/',
      'PATCH /bikes/' + bike.id,
      'DELETE /bikes/' + bike.id,
    ]);
  });
});
