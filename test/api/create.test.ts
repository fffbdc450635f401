import {
  CLIENT_FIELD_PATHS,
  EXACT_NUMBERS,
  NUL_FIELDS,
  UUID_V4,
  WRONG_TYPES,
  type Bike,
  expectExactShape,
  expectPlainError,
  expectedBike,
  newBike,
  useApi,
  withValue,
  without,
} from './helpers';

describe('POST /bikes/ (create)', () => {
  const api = useApi();

  /** Runs a request that must fail and checks that the catalog did not change. */
  async function expectNothingStored(send: () => Promise<{ status: number }>, status: number): Promise<void> {
    const before = await api.all();
    expect((await send()).status).toBe(status);
    expect(await api.all()).toEqual(before);
  }

  describe('with a valid body', () => {
    it('answers 200 with the stored bike: the fields sent, a UUID v4 id and the derived handle', async () => {
      const fields = newBike({ title: 'Hybrid Bicycle Sentra' });
      const res = await api.request('POST', '/bikes/', { json: fields });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const bike = res.json<Bike>();
      expect(bike.id).toMatch(UUID_V4);
      expect(bike).toEqual(expectedBike(fields, bike.id, 'hybrid-bicycle-sentra'));
      expectExactShape(bike);
    });

    it('stores the bike: it reads back the same by id, by handle, by title and in the list', async () => {
      const fields = newBike();
      const bike = await api.create(fields);
      expect(await api.find(bike.id)).toEqual(bike);
      expect((await api.byHandle(bike.handle)).json()).toEqual(bike);
      expect(await api.search(fields.title)).toEqual([bike]);
      expect(await api.all()).toContainEqual(bike);
    });

    it('gives each bike its own id, even for identical bodies, and both share the handle', async () => {
      const fields = newBike();
      const first = await api.create(fields);
      const second = await api.create(fields);
      expect(second.id).not.toBe(first.id);
      expect(second.handle).toBe(first.handle);
      expect(await api.find(first.id)).toEqual(first);
      expect(await api.find(second.id)).toEqual(second);
    });

    it('ignores an id and a handle in the body: the server makes its own', async () => {
      const bodyId = '0b6f0a36-9a1f-4c53-8f6e-3c1d2f6f9a11';
      const fields = newBike({ title: 'Gravel Runner Ignored' });
      const res = await api.request('POST', '/bikes/', { json: { ...fields, id: bodyId, handle: 'my-own-handle' } });
      expect(res.status).toBe(200);
      const bike = res.json<Bike>();
      expect(bike.id).not.toBe(bodyId);
      expect(bike.id).toMatch(UUID_V4);
      expect(bike.handle).toBe('gravel-runner-ignored');
      expect(await api.find(bodyId)).toBeNull();
      expect((await api.byHandle('my-own-handle')).status).toBe(404);
    });

    it.each([12345, null, true, { nested: 1 }, ''])('ignores a body id of any type (%p)', async (id) => {
      const fields = newBike();
      const res = await api.request('POST', '/bikes/', { json: { ...fields, id, handle: id } });
      expect(res.status).toBe(200);
      const bike = res.json<Bike>();
      expect(bike.id).toMatch(UUID_V4);
      expect(bike).toEqual(expectedBike(fields, bike.id, fields.title.replaceAll(' ', '-').toLowerCase()));
    });

    it('stores a very long title whole, and finds the bike by its handle and by title', async () => {
      const title = `Long ${'Title '.repeat(15_000)}${Date.now()}`; // 90 KB: far past a b-tree entry, within a URL
      const bike = await api.create(newBike({ title }));
      expect(bike.title).toBe(title);
      expect(bike.handle).toBe(title.replaceAll(' ', '-').toLowerCase());
      expect((await api.byHandle(bike.handle)).json()).toEqual(bike);
      expect(await api.search(title)).toEqual([bike]);
    });

    it('does not normalise Unicode: composed and decomposed forms stay as sent', async () => {
      const composed = `Caf\u00e9 ${Date.now()}`;
      const decomposed = composed.normalize('NFD');
      const a = await api.create(newBike({ title: composed }));
      const b = await api.create(newBike({ title: decomposed }));
      expect((await api.find(a.id))?.title).toBe(composed);
      expect((await api.find(b.id))?.title).toBe(decomposed);
      expect(await api.search(composed)).toEqual([a]);
      expect(await api.search(decomposed)).toEqual([b]);
    });

    it('ignores unknown fields, top-level and nested: they are neither stored nor returned', async () => {
      const fields = newBike();
      const body = {
        ...fields,
        color: 'red',
        seq: 1,
        insertedAt: 'now',
        priceRange: {
          minPrice: { ...fields.priceRange.minPrice, tax: 7 },
          maxPrice: { ...fields.priceRange.maxPrice },
          currency: 'EUR',
        },
      };
      const res = await api.request('POST', '/bikes/', { json: body });
      expect(res.status).toBe(200);
      const bike = res.json<Bike>();
      expectExactShape(bike);
      expect(bike).toEqual(expectedBike(fields, bike.id, bike.handle));
      const stored = await api.find(bike.id);
      expectExactShape(stored);
      expect(stored).toEqual(bike);
    });

    it.each(EXACT_NUMBERS)(
      'reads the double %p back as the same double, as totalInventory and as prices',
      async (n) => {
        const negated = n === 0 ? 0 : -n;
        const fields = newBike({
          totalInventory: n,
          priceRange: {
            minPrice: { amount: n, currencyCode: 'USD' },
            maxPrice: { amount: negated, currencyCode: 'EUR' },
          },
        });
        const bike = await api.create(fields);
        expect(bike).toEqual(expectedBike(fields, bike.id, bike.handle));
        const stored = await api.find(bike.id);
        expect(stored?.totalInventory).toBe(n);
        expect(stored?.priceRange.minPrice.amount).toBe(n);
        expect(stored?.priceRange.maxPrice.amount).toBe(negated);
      },
    );

    it('reads numbers written in exponent form back as the same numbers (1e308, -2.5E-3)', async () => {
      const fields = newBike();
      const raw = JSON.stringify({ ...fields, totalInventory: 0 })
        .replace('"totalInventory":0', '"totalInventory":1e308')
        .replace('"amount":499.99', '"amount":-2.5E-3');
      const res = await api.request('POST', '/bikes/', { raw, contentType: 'application/json' });
      expect(res.status).toBe(200);
      const stored = await api.find(res.json<Bike>().id);
      expect(stored?.totalInventory).toBe(1e308);
      expect(stored?.priceRange.minPrice.amount).toBe(-0.0025);
    });

    it.each([
      'not a date at all',
      '',
      '2024-13-45T99:99:99Z',
      '  spaced  out  ',
      'yesterday, around noon 🚲',
      '1709287200000',
      '<script>alert(1)</script>',
      'line one\nline two\ttabbed "quoted" \\ back',
    ])('keeps createdAt %p verbatim', async (createdAt) => {
      const bike = await api.create(newBike({ createdAt }));
      expect(bike.createdAt).toBe(createdAt);
      expect((await api.find(bike.id))?.createdAt).toBe(createdAt);
    });

    it('keeps every string verbatim: unicode, quotes, backslashes, SQL and very long text', async () => {
      const fields = newBike({
        title: `Vélo "Ñandú" \\ O'Brien ${Date.now()} 自転車`,
        productType: "'; DROP TABLE bikes; --",
        description: 'x'.repeat(100_000),
        vendor: '😀 \u00a0 \u2028 emoji',
        priceRange: { minPrice: { amount: 1, currencyCode: 'usd' }, maxPrice: { amount: 2, currencyCode: '' } },
      });
      const bike = await api.create(fields);
      expect(await api.find(bike.id)).toEqual(expectedBike(fields, bike.id, bike.handle));
    });

    it('accepts availableForSale false and a totalInventory of 0', async () => {
      const fields = newBike({ availableForSale: false, totalInventory: 0 });
      const bike = await api.create(fields);
      expect(await api.find(bike.id)).toEqual(expectedBike(fields, bike.id, bike.handle));
    });
  });

  describe('the handle', () => {
    it.each([
      ['Hybrid Bicycle Sentra', 'hybrid-bicycle-sentra'],
      ['Fat  Bike', 'fat--bike'],
      ['ÉLAN Road', 'élan-road'],
      [' Leading and trailing ', '-leading-and-trailing-'],
      ['Tab\tand_Under-score.Dot', 'tab\tand_under-score.dot'],
      ['ÄÖÜ \u1e9e \u0130stanbul', 'äöü-ß-i\u0307stanbul'],
      ['', ''],
    ])('for the title %p is %p: spaces become dashes, then lowercase, nothing else changes', async (title, handle) => {
      const bike = await api.create(newBike({ title }));
      expect(bike.handle).toBe(handle);
      expect((await api.find(bike.id))?.handle).toBe(handle);
    });
  });

  describe('with a body that fails validation, it answers 400 and stores nothing', () => {
    it.each(CLIENT_FIELD_PATHS)('when %s is missing', async (path) => {
      await expectNothingStored(() => api.request('POST', '/bikes/', { json: without(newBike(), path) }), 400);
    });

    it.each(WRONG_TYPES)('when %s is %p (wrong type)', async (path, value) => {
      await expectNothingStored(() => api.request('POST', '/bikes/', { json: withValue(newBike(), path, value) }), 400);
    });

    it.each(NUL_FIELDS)('when %s contains U+0000', async (path) => {
      await expectNothingStored(
        () => api.request('POST', '/bikes/', { json: withValue(newBike(), path, 'before\u0000after') }),
        400,
      );
    });

    it('when a string holds a lone UTF-16 surrogate, which PostgreSQL cannot store as sent', async () => {
      const raw = JSON.stringify(newBike()).replace('"Hybrid', '"\\ud800Hybrid');
      await expectNothingStored(() => api.request('POST', '/bikes/', { raw, contentType: 'application/json' }), 400);
    });

    it('when a number is too large to be a finite double (1e999)', async () => {
      const raw = JSON.stringify(newBike({ totalInventory: 7 })).replace(
        '"totalInventory":7',
        '"totalInventory":1e999',
      );
      await expectNothingStored(() => api.request('POST', '/bikes/', { raw, contentType: 'application/json' }), 400);
    });

    it('when there is no body', async () => {
      await expectNothingStored(() => api.request('POST', '/bikes/'), 400);
    });

    it('when the body is an empty JSON object', async () => {
      await expectNothingStored(() => api.request('POST', '/bikes/', { json: {} }), 400);
    });

    it.each(['[]', JSON.stringify([newBike()]), 'null', '"a bike"', '42', 'true'])(
      'when the JSON body is %s, not an object',
      async (raw) => {
        await expectNothingStored(() => api.request('POST', '/bikes/', { raw, contentType: 'application/json' }), 400);
      },
    );

    it.each(['{', '{"title": "x",}', "{'title': 'x'}", 'title=x', '{"title": "x"} trailing'])(
      'when the JSON is malformed: %s',
      async (raw) => {
        const res = await api.request('POST', '/bikes/', { raw, contentType: 'application/json' });
        expectPlainError(res, 400, 'Bad Request');
      },
    );

    it('when a valid bike is sent with another content type: the body counts as absent', async () => {
      const raw = JSON.stringify(newBike());
      await expectNothingStored(() => api.request('POST', '/bikes/', { raw, contentType: 'text/plain' }), 400);
      await expectNothingStored(() => api.request('POST', '/bikes/', { raw }), 400);
    });

    it('when the body is URL-encoded: form values are strings, so the boolean and numbers are wrong', async () => {
      const form =
        'title=Form+Bike&productType=Road&createdAt=today&description=d&vendor=v&availableForSale=true&totalInventory=3' +
        '&priceRange[minPrice][amount]=1&priceRange[minPrice][currencyCode]=USD' +
        '&priceRange[maxPrice][amount]=2&priceRange[maxPrice][currencyCode]=USD';
      await expectNothingStored(() => api.request('POST', '/bikes/', { form }), 400);
    });

    it('answers with a plain-text reason phrase, never a JSON body', async () => {
      const res = await api.request('POST', '/bikes/', { json: without(newBike(), 'title') });
      expectPlainError(res, 400, 'Bad Request');
    });
  });

  describe('token checks come first', () => {
    it('without a token it answers 401 and stores nothing, even for a valid body', async () => {
      await expectNothingStored(() => api.request('POST', '/bikes/', { json: newBike(), token: null }), 401);
    });

    it('without a token and with an invalid body it answers 401, not 400', async () => {
      const res = await api.request('POST', '/bikes/', { json: { title: 5 }, token: null });
      expectPlainError(res, 401, 'Unauthorized');
    });

    it('without a token and with malformed JSON it answers 401', async () => {
      const res = await api.request('POST', '/bikes/', { raw: '{oops', contentType: 'application/json', token: null });
      expect(res.status).toBe(401);
    });

    it('with a bad token and an invalid body it answers 403, not 400', async () => {
      const res = await api.request('POST', '/bikes/', { json: {}, token: 'not.a.token' });
      expectPlainError(res, 403, 'Forbidden: the token is malformed or lacks a claim this service requires');
    });

    it('with a bad token it stores nothing', async () => {
      await expectNothingStored(() => api.request('POST', '/bikes/', { json: newBike(), token: `${api.token}x` }), 403);
    });
  });
});
