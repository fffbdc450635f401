import { randomUUID } from 'node:crypto';
import { bikeFields, type BikeFields } from '../../src/bikes/bike';
import { exampleOf } from '../../src/http/schema';
import { OPTIONAL_FIELD_PATHS } from '../support/bikes';
import {
  CLIENT_FIELD_PATHS,
  EXACT_NUMBERS,
  NOT_UUIDS,
  NUL_FIELDS,
  WRONG_TYPES,
  type Bike,
  expectExactShape,
  expectPlainError,
  newBike,
  unknownId,
  useApi,
  withValue,
} from './helpers';

describe('PATCH /bikes/<id> (partial update)', () => {
  const api = useApi();

  /** Sends a PATCH that must fail with `status` and checks the bike did not change. */
  async function expectUnchanged(bike: Bike, send: () => Promise<{ status: number }>, status = 400): Promise<void> {
    const res = await send();
    expect(res.status).toBe(status);
    expect(await api.find(bike.id)).toEqual(bike);
  }

  /** A patch body holding one field of a bike body (a dotted path), e.g. priceRange.minPrice.amount. */
  function onlyField(path: string, value: unknown): Record<string, unknown> {
    const full = withValue(newBike(), path, value);
    const top = path.split('.')[0];
    return { [top]: full[top] };
  }

  describe('with a valid body', () => {
    const changes: Array<[string, unknown]> = [
      ['title', 'Patched Title'],
      ['productType', 'Cargo'],
      ['createdAt', 'sometime last week'],
      ['description', 'Now with a basket'],
      ['vendor', 'Other Vendor'],
      ['availableForSale', false],
      ['totalInventory', 0],
      ['totalInventory', -3.5],
      ['priceRange', { minPrice: { amount: 1, currencyCode: 'GBP' }, maxPrice: { amount: 2, currencyCode: 'GBP' } }],
      ['handle', 'a-handle-of-my-own'],
    ];

    it.each(changes)('writes only %s, keeps every other field, and answers the merged bike', async (key, value) => {
      const bike = await api.create();
      const res = await api.request('PATCH', `/bikes/${bike.id}`, { json: { [key]: value } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const merged = { ...bike, [key]: value };
      expect(res.json()).toEqual(merged);
      expectExactShape(res.json());
      expect(await api.find(bike.id)).toEqual(merged);
    });

    it('writes several fields at once and keeps the rest', async () => {
      const bike = await api.create();
      const patch = { title: 'Two At Once', vendor: 'Both', totalInventory: 99 };
      const res = await api.request('PATCH', `/bikes/${bike.id}`, { json: patch });
      expect(res.status).toBe(200);
      expect(res.json()).toEqual({ ...bike, ...patch });
      expect(await api.find(bike.id)).toEqual({ ...bike, ...patch });
    });

    it('does not re-derive the handle when the title changes', async () => {
      const bike = await api.create(newBike({ title: `Original Title ${randomUUID().slice(0, 8)}` }));
      const res = await api.request('PATCH', `/bikes/${bike.id}`, { json: { title: 'Brand New Title' } });
      expect(res.json<Bike>().handle).toBe(bike.handle);
      expect((await api.find(bike.id))?.handle).toBe(bike.handle);
    });

    it('writes a body handle as given, not derived, even alongside a new title', async () => {
      const bike = await api.create();
      const handle = `Not Derived ${randomUUID().slice(0, 8)}`;
      const res = await api.request('PATCH', `/bikes/${bike.id}`, { json: { title: 'Other Title', handle } });
      expect(res.json()).toEqual({ ...bike, title: 'Other Title', handle });
      expect((await api.byHandle(handle)).json()).toEqual({ ...bike, title: 'Other Title', handle });
    });

    it('sets to null an optional field it names with null, keeps one it leaves out, and refuses null for any other field', async () => {
      // Each optional field (none today: the field map's own test holds them, test/field-map.test.ts).
      for (const path of OPTIONAL_FIELD_PATHS) {
        const example = path.split('.').reduce<unknown>((value, key) => (value as never)[key], exampleOf(bikeFields));
        const bike = await api.create(withValue(newBike(), path, example) as unknown as BikeFields);
        const kept = await api.request('PATCH', `/bikes/${bike.id}`, { json: { handle: 'kept' } });
        expect(kept.json()).toEqual({ ...bike, handle: 'kept' });
        const cleared = await api.request('PATCH', `/bikes/${bike.id}`, { json: onlyField(path, null) });
        expect(cleared.status).toBe(200);
        expect(cleared.json()).toEqual(withValue({ ...bike, handle: 'kept' } as never, path, null));
        expect(await api.find(bike.id)).toEqual(cleared.json());
      }
      const bike = await api.create();
      for (const path of CLIENT_FIELD_PATHS) {
        await expectUnchanged(bike, () => api.request('PATCH', `/bikes/${bike.id}`, { json: onlyField(path, null) }));
      }
    });

    it('ignores unknown fields, top-level and nested: not stored, not returned; a patch of them alone changes nothing', async () => {
      const bike = await api.create();
      const alone = await api.request('PATCH', `/bikes/${bike.id}`, { json: { color: 'red', seq: 1 } });
      expect(alone.status).toBe(200);
      expect(alone.json()).toEqual(bike);
      const beside = await api.request('PATCH', `/bikes/${bike.id}`, {
        json: {
          vendor: 'Known',
          color: 'red',
          priceRange: { ...bike.priceRange, currency: 'EUR', minPrice: { ...bike.priceRange.minPrice, tax: 7 } },
        },
      });
      expect(beside.status).toBe(200);
      expect(beside.json()).toEqual({ ...bike, vendor: 'Known' });
      expectExactShape(beside.json());
      expect(await api.find(bike.id)).toEqual({ ...bike, vendor: 'Known' });
    });

    it('ignores a body id: the bike keeps its id and nothing appears at the body id', async () => {
      const bike = await api.create();
      const bodyId = unknownId();
      const res = await api.request('PATCH', `/bikes/${bike.id}`, { json: { id: bodyId, vendor: 'Id Ignored' } });
      expect(res.status).toBe(200);
      expect(res.json()).toEqual({ ...bike, vendor: 'Id Ignored' });
      expect(await api.find(bodyId)).toBeNull();
    });

    it.each([12345, null, true, '', 'not-a-uuid'])('ignores a body id of any type or form (%p)', async (id) => {
      const bike = await api.create();
      const res = await api.request('PATCH', `/bikes/${bike.id}`, { json: { id, vendor: 'Still Me' } });
      expect(res.status).toBe(200);
      expect(res.json()).toEqual({ ...bike, vendor: 'Still Me' });
      expect(await api.find(bike.id)).toEqual({ ...bike, vendor: 'Still Me' });
    });

    it('writes an empty handle as given', async () => {
      const bike = await api.create();
      const res = await api.request('PATCH', `/bikes/${bike.id}`, { json: { handle: '' } });
      expect(res.status).toBe(200);
      expect(await api.find(bike.id)).toEqual({ ...bike, handle: '' });
    });

    it('ignores unknown fields: they are neither stored nor returned', async () => {
      const bike = await api.create();
      const res = await api.request('PATCH', `/bikes/${bike.id}`, { json: { color: 'red', seq: 1, vendor: 'Known' } });
      expect(res.status).toBe(200);
      expect(res.json()).toEqual({ ...bike, vendor: 'Known' });
      expectExactShape(await api.find(bike.id));
    });

    it('ignores unknown fields inside a complete priceRange', async () => {
      const bike = await api.create();
      const priceRange = { minPrice: { amount: 5, currencyCode: 'CHF' }, maxPrice: { amount: 6, currencyCode: 'CHF' } };
      const res = await api.request('PATCH', `/bikes/${bike.id}`, {
        json: { priceRange: { ...priceRange, extra: 1, minPrice: { ...priceRange.minPrice, tax: 2 } } },
      });
      expect(res.json()).toEqual({ ...bike, priceRange });
      expect(await api.find(bike.id)).toEqual({ ...bike, priceRange });
    });

    it('with an empty object, changes nothing and answers the bike', async () => {
      const bike = await api.create();
      const res = await api.request('PATCH', `/bikes/${bike.id}`, { json: {} });
      expect(res.status).toBe(200);
      expect(res.json()).toEqual(bike);
      expect(await api.find(bike.id)).toEqual(bike);
    });

    it('with no body (an empty object), changes nothing and answers the bike', async () => {
      const bike = await api.create();
      const res = await api.request('PATCH', `/bikes/${bike.id}`);
      expect(res.status).toBe(200);
      expect(res.json()).toEqual(bike);
    });

    it('with a body of another content type, answers 400 and changes nothing', async () => {
      const bike = await api.create();
      const res = await api.request('PATCH', `/bikes/${bike.id}`, {
        raw: '{"title":"Not read"}',
        contentType: 'text/plain',
      });
      expect(res.status).toBe(400);
      expect(await api.find(bike.id)).toEqual(bike);
    });

    it('accepts a URL-encoded body for string fields', async () => {
      const bike = await api.create();
      const res = await api.request('PATCH', `/bikes/${bike.id}`, {
        form: { title: 'Form Title', vendor: 'Form & Vendor' },
      });
      expect(res.status).toBe(200);
      expect(res.json()).toEqual({ ...bike, title: 'Form Title', vendor: 'Form & Vendor' });
      expect(await api.find(bike.id)).toEqual({ ...bike, title: 'Form Title', vendor: 'Form & Vendor' });
    });

    it.each(EXACT_NUMBERS)('reads the double %p back as the same double', async (n) => {
      const bike = await api.create();
      const priceRange = { minPrice: { amount: n, currencyCode: 'USD' }, maxPrice: { amount: n, currencyCode: 'USD' } };
      const res = await api.request('PATCH', `/bikes/${bike.id}`, { json: { totalInventory: n, priceRange } });
      expect(res.status).toBe(200);
      expect(await api.find(bike.id)).toEqual({ ...bike, totalInventory: n, priceRange });
    });

    it('keeps strings verbatim, createdAt included', async () => {
      const bike = await api.create();
      const patch = { createdAt: '  31/02/2024, give or take ', description: 'emoji 🚲 "quotes" \\ and\nnewline' };
      await api.request('PATCH', `/bikes/${bike.id}`, { json: patch });
      expect(await api.find(bike.id)).toEqual({ ...bike, ...patch });
    });

    it('keeps the bike in its place in /bikes/all', async () => {
      const [a, b, c] = [await api.create(), await api.create(), await api.create()];
      await api.request('PATCH', `/bikes/${a.id}`, { json: { title: 'Moved?' } });
      const ours = (await api.all()).filter((x) => [a.id, b.id, c.id].includes(x.id)).map((x) => x.id);
      expect(ours).toEqual([a.id, b.id, c.id]);
    });
  });

  describe('fields with the wrong type answer 400 and change nothing', () => {
    it.each(WRONG_TYPES)('when %s is %p', async (path, value) => {
      const bike = await api.create();
      await expectUnchanged(bike, () => api.request('PATCH', `/bikes/${bike.id}`, { json: onlyField(path, value) }));
    });

    it.each([
      ['handle', 5],
      ['handle', null],
      ['handle', true],
    ])('when %s is %p', async (key, value) => {
      const bike = await api.create();
      await expectUnchanged(bike, () => api.request('PATCH', `/bikes/${bike.id}`, { json: { [key]: value } }));
    });

    it.each([
      ['without maxPrice', { minPrice: { amount: 1, currencyCode: 'USD' } }],
      ['without minPrice', { maxPrice: { amount: 1, currencyCode: 'USD' } }],
      ['empty', {}],
      ['with a Money missing currencyCode', { minPrice: { amount: 1 }, maxPrice: { amount: 2, currencyCode: 'USD' } }],
      [
        'with a Money missing amount',
        { minPrice: { amount: 1, currencyCode: 'USD' }, maxPrice: { currencyCode: 'USD' } },
      ],
    ])('when priceRange is incomplete (%s)', async (_label, priceRange) => {
      const bike = await api.create();
      await expectUnchanged(bike, () => api.request('PATCH', `/bikes/${bike.id}`, { json: { priceRange } }));
    });

    it('when one field is valid and another is not, neither is written', async () => {
      const bike = await api.create();
      await expectUnchanged(bike, () =>
        api.request('PATCH', `/bikes/${bike.id}`, { json: { title: 'Would Be Written', totalInventory: '5' } }),
      );
    });

    it.each([...NUL_FIELDS, 'handle'])('when %s contains U+0000', async (path) => {
      const bike = await api.create();
      const body = path === 'handle' ? { handle: 'a\u0000b' } : onlyField(path, 'nul\u0000here');
      await expectUnchanged(bike, () => api.request('PATCH', `/bikes/${bike.id}`, { json: body }));
    });

    it('when a URL-encoded body gives a number field a string', async () => {
      const bike = await api.create();
      await expectUnchanged(bike, () => api.request('PATCH', `/bikes/${bike.id}`, { form: { totalInventory: '5' } }));
      await expectUnchanged(bike, () =>
        api.request('PATCH', `/bikes/${bike.id}`, { form: { availableForSale: 'true' } }),
      );
    });

    it.each(['{', '{"title": }', 'nope', '{"a":1}{"b":2}'])('when the JSON is malformed: %s', async (raw) => {
      const bike = await api.create();
      await expectUnchanged(bike, () =>
        api.request('PATCH', `/bikes/${bike.id}`, { raw, contentType: 'application/json' }),
      );
      const res = await api.request('PATCH', `/bikes/${bike.id}`, { raw, contentType: 'application/json' });
      expectPlainError(res, 400, 'Bad Request');
    });

    it.each(['[]', '[{"title":"x"}]', 'null', '"title"', '3'])(
      'when the JSON body is %s, not an object',
      async (raw) => {
        const bike = await api.create();
        await expectUnchanged(bike, () =>
          api.request('PATCH', `/bikes/${bike.id}`, { raw, contentType: 'application/json' }),
        );
      },
    );
  });

  describe('a bike that does not exist answers 404', () => {
    it('for a well-formed id with no bike, and nothing is created there', async () => {
      const id = unknownId();
      const res = await api.request('PATCH', `/bikes/${id}`, { json: { title: 'Ghost' } });
      expectPlainError(res, 404, 'Not Found');
      expect(await api.find(id)).toBeNull();
    });

    it('for a well-formed id with no bike, even with an empty body', async () => {
      expect((await api.request('PATCH', `/bikes/${unknownId()}`, { json: {} })).status).toBe(404);
    });

    it('for a well-formed id with no bike, even when the fields are invalid', async () => {
      expect((await api.request('PATCH', `/bikes/${unknownId()}`, { json: { totalInventory: '5' } })).status).toBe(404);
    });

    it('for a deleted bike', async () => {
      const bike = await api.create();
      await api.request('DELETE', `/bikes/${bike.id}`);
      expect((await api.request('PATCH', `/bikes/${bike.id}`, { json: { title: 'Back?' } })).status).toBe(404);
      expect(await api.find(bike.id)).toBeNull();
    });

    it.each(NOT_UUIDS)('for the path id %p, which is not a UUID', async (id) => {
      const res = await api.request('PATCH', `/bikes/${id}`, { json: { title: 'x' } });
      expectPlainError(res, 404, 'Not Found');
    });
  });

  describe('token checks come first', () => {
    it('without a token it answers 401 and changes nothing', async () => {
      const bike = await api.create();
      await expectUnchanged(
        bike,
        () => api.request('PATCH', `/bikes/${bike.id}`, { json: { title: 'x' }, token: null }),
        401,
      );
    });

    it('with a bad token it answers 403 and changes nothing', async () => {
      const bike = await api.create();
      await expectUnchanged(
        bike,
        () => api.request('PATCH', `/bikes/${bike.id}`, { json: { title: 'x' }, token: 'a.b.c' }),
        403,
      );
    });

    it('without a token, invalid fields and malformed JSON give 401, not 400', async () => {
      const bike = await api.create();
      expect(
        (await api.request('PATCH', `/bikes/${bike.id}`, { json: { totalInventory: '5' }, token: null })).status,
      ).toBe(401);
      expect(
        (await api.request('PATCH', `/bikes/${bike.id}`, { raw: '{', contentType: 'application/json', token: null }))
          .status,
      ).toBe(401);
    });

    it('without a token, an unknown or non-UUID id gives 401, not 404; with a bad token, 403', async () => {
      for (const id of [unknownId(), 'not-a-uuid']) {
        expect((await api.request('PATCH', `/bikes/${id}`, { json: {}, token: null })).status).toBe(401);
        expect((await api.request('PATCH', `/bikes/${id}`, { json: {}, token: 'bad' })).status).toBe(403);
      }
    });
  });

  describe('concurrent PATCHes', () => {
    it('of different fields on one bike all survive', async () => {
      const bike = await api.create();
      const patches: Array<Record<string, unknown>> = [
        { title: 'Concurrent Title' },
        { productType: 'Concurrent Type' },
        { createdAt: 'concurrently' },
        { description: 'Concurrent description' },
        { vendor: 'Concurrent Vendor' },
        { availableForSale: false },
        { totalInventory: 4242 },
        {
          priceRange: { minPrice: { amount: 11, currencyCode: 'SEK' }, maxPrice: { amount: 22, currencyCode: 'SEK' } },
        },
        { handle: 'concurrent-handle' },
      ];
      const responses = await Promise.all(patches.map((json) => api.request('PATCH', `/bikes/${bike.id}`, { json })));
      for (const res of responses) expect(res.status).toBe(200);
      const expected = Object.assign({ ...bike }, ...patches);
      expect(await api.find(bike.id)).toEqual(expected);
    });

    it('of different fields, repeated over many rounds with each field written many times, keep every last write', async () => {
      const bike = await api.create();
      const rounds = 5;
      const requests: Array<Promise<{ status: number }>> = [];
      for (let round = 0; round < rounds; round++) {
        requests.push(
          api.request('PATCH', `/bikes/${bike.id}`, { json: { title: `t${round}` } }),
          api.request('PATCH', `/bikes/${bike.id}`, { json: { vendor: `v${round}` } }),
          api.request('PATCH', `/bikes/${bike.id}`, { json: { description: `d${round}` } }),
          api.request('PATCH', `/bikes/${bike.id}`, { json: { productType: `p${round}` } }),
          api.request('PATCH', `/bikes/${bike.id}`, { json: { createdAt: `c${round}` } }),
        );
      }
      for (const res of await Promise.all(requests)) expect(res.status).toBe(200);
      const stored = await api.find(bike.id);
      // Every field was written by some PATCH; none kept its original value (nothing was undone).
      for (const key of ['title', 'vendor', 'description', 'productType', 'createdAt'] as const) {
        expect(stored?.[key]).toMatch(new RegExp(`^${key[0]}[0-${rounds - 1}]$`));
      }
      expect(stored?.totalInventory).toBe(bike.totalInventory);
      expect(stored?.priceRange).toEqual(bike.priceRange);
    });
  });
});
