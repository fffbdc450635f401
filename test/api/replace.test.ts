import { randomUUID } from 'node:crypto';
import {
  CLIENT_FIELD_PATHS,
  EXACT_NUMBERS,
  NOT_UUIDS,
  NUL_FIELDS,
  WRONG_TYPES,
  type Bike,
  type BikeFields,
  expectExactShape,
  expectPlainError,
  expectedBike,
  newBike,
  unknownId,
  useApi,
  withValue,
  without,
} from './helpers';

describe('PUT /bikes/<id> (replace)', () => {
  const api = useApi();

  /** A full replacement body for the bike at `id`: new client fields plus id and handle. */
  function replacement(
    id: string,
    overrides: Partial<BikeFields> = {},
    handle = `replaced-${randomUUID().slice(0, 8)}`,
  ) {
    return { ...newBike({ title: 'Replacement Title', vendor: 'Replacer', ...overrides }), id, handle };
  }

  /** Sends a PUT that must fail with `status` and checks the bike and the list did not change. */
  async function expectUnchanged(bike: Bike, send: () => Promise<{ status: number }>, status = 404): Promise<void> {
    const before = await api.all();
    expect((await send()).status).toBe(status);
    expect(await api.find(bike.id)).toEqual(bike);
    expect(await api.all()).toEqual(before);
  }

  describe('with a valid body', () => {
    it('replaces every field, answers 200 with the stored bike, and reads back the same', async () => {
      const bike = await api.create();
      const body = replacement(bike.id, {
        productType: 'Gravel',
        createdAt: 'replaced at noon',
        description: 'new text',
        availableForSale: false,
        totalInventory: 3,
        priceRange: {
          minPrice: { amount: 1000, currencyCode: 'EUR' },
          maxPrice: { amount: 1500.25, currencyCode: 'EUR' },
        },
      });
      const res = await api.request('PUT', `/bikes/${bike.id}`, { json: body });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.json()).toEqual(expectedBike(body, bike.id, body.handle));
      expectExactShape(res.json());
      expect(await api.find(bike.id)).toEqual(res.json());
    });

    it('stores the body handle as given, not derived from the title', async () => {
      const bike = await api.create();
      const handle = `Custom Handle ÉÀ ${randomUUID().slice(0, 8)}`;
      const res = await api.request('PUT', `/bikes/${bike.id}`, {
        json: replacement(bike.id, { title: 'Whatever Title' }, handle),
      });
      expect(res.status).toBe(200);
      expect(res.json<Bike>().handle).toBe(handle);
      expect((await api.byHandle(handle)).json()).toEqual(res.json());
      expect((await api.byHandle(bike.handle)).status).toBe(404);
    });

    it('keeps the path id when the body carries another id, and leaves the bike at that other id alone', async () => {
      const bike = await api.create();
      const other = await api.create();
      const res = await api.request('PUT', `/bikes/${bike.id}`, { json: replacement(other.id) });
      expect(res.status).toBe(200);
      expect(res.json<Bike>().id).toBe(bike.id);
      expect((await api.find(bike.id))?.vendor).toBe('Replacer');
      expect(await api.find(other.id)).toEqual(other);
    });

    it('keeps the path id when the body id is any other truthy string, and creates nothing there', async () => {
      const bike = await api.create();
      const bodyId = unknownId();
      const res = await api.request('PUT', `/bikes/${bike.id}`, { json: replacement(bodyId) });
      expect(res.status).toBe(200);
      expect(res.json<Bike>().id).toBe(bike.id);
      expect(await api.find(bodyId)).toBeNull();

      const res2 = await api.request('PUT', `/bikes/${bike.id}`, { json: replacement('not even a uuid') });
      expect(res2.status).toBe(200);
      expect(res2.json<Bike>().id).toBe(bike.id);
    });

    it('keeps the bike in its place in /bikes/all', async () => {
      const [a, b, c] = [await api.create(), await api.create(), await api.create()];
      const res = await api.request('PUT', `/bikes/${b.id}`, { json: replacement(b.id) });
      expect(res.status).toBe(200);
      const ours = (await api.all()).filter((x) => [a.id, b.id, c.id].includes(x.id));
      expect(ours).toEqual([a, res.json(), c]);
    });

    it('at a well-formed id with no bike, creates the bike there: 200, same response as a replace', async () => {
      const id = unknownId();
      const body = replacement(id);
      const res = await api.request('PUT', `/bikes/${id}`, { json: body });
      expect(res.status).toBe(200);
      expect(res.json()).toEqual(expectedBike(body, id, body.handle));
      expect(await api.find(id)).toEqual(res.json());
      const all = await api.all();
      expect(all[all.length - 1]).toEqual(res.json());
    });

    it('at an unknown id, uses the path id even when the body carries another', async () => {
      const id = unknownId();
      const bodyId = unknownId();
      const res = await api.request('PUT', `/bikes/${id}`, { json: replacement(bodyId) });
      expect(res.status).toBe(200);
      expect(res.json<Bike>().id).toBe(id);
      expect(await api.find(bodyId)).toBeNull();
    });

    it('can replace the same bike twice; the second replace wins', async () => {
      const bike = await api.create();
      await api.request('PUT', `/bikes/${bike.id}`, { json: replacement(bike.id, { title: 'First' }) });
      const second = await api.request('PUT', `/bikes/${bike.id}`, { json: replacement(bike.id, { title: 'Second' }) });
      expect(second.status).toBe(200);
      expect(await api.find(bike.id)).toEqual(second.json());
    });

    it('ignores unknown fields: they are neither stored nor returned', async () => {
      const bike = await api.create();
      const res = await api.request('PUT', `/bikes/${bike.id}`, {
        json: { ...replacement(bike.id), color: 'blue', seq: 0 },
      });
      expect(res.status).toBe(200);
      expectExactShape(res.json());
      expectExactShape(await api.find(bike.id));
    });

    it.each(EXACT_NUMBERS)('reads the double %p back as the same double', async (n) => {
      const bike = await api.create();
      const body = replacement(bike.id, {
        totalInventory: n,
        priceRange: { minPrice: { amount: n, currencyCode: 'USD' }, maxPrice: { amount: n, currencyCode: 'USD' } },
      });
      expect((await api.request('PUT', `/bikes/${bike.id}`, { json: body })).status).toBe(200);
      expect(await api.find(bike.id)).toEqual(expectedBike(body, bike.id, body.handle));
    });

    it('keeps createdAt and every other string verbatim', async () => {
      const bike = await api.create();
      const body = replacement(bike.id, { createdAt: 'some time in spring, maybe', title: ' spaced  "title" \\ ' });
      expect((await api.request('PUT', `/bikes/${bike.id}`, { json: body })).status).toBe(200);
      expect(await api.find(bike.id)).toEqual(expectedBike(body, bike.id, body.handle));
    });

    it('accepts the bike it read with GET, sent back as is', async () => {
      const bike = await api.create();
      const res = await api.request('PUT', `/bikes/${bike.id}`, { json: bike });
      expect(res.status).toBe(200);
      expect(res.json()).toEqual(bike);
    });
  });

  describe('every failure answers 404 and changes nothing', () => {
    it.each([...CLIENT_FIELD_PATHS, 'id', 'handle'])('when %s is missing', async (path) => {
      const bike = await api.create();
      const body = without(replacement(bike.id) as unknown as BikeFields, path);
      await expectUnchanged(bike, () => api.request('PUT', `/bikes/${bike.id}`, { json: body }));
    });

    it.each([
      ['id', ''],
      ['id', null],
      ['id', 0],
      ['id', false],
      ['handle', ''],
      ['handle', null],
      ['handle', 0],
      ['handle', false],
    ])('when %s is %p (not truthy)', async (key, value) => {
      const bike = await api.create();
      const body = { ...replacement(bike.id), [key]: value };
      await expectUnchanged(bike, () => api.request('PUT', `/bikes/${bike.id}`, { json: body }));
    });

    it.each(WRONG_TYPES)('when %s is %p (wrong type)', async (path, value) => {
      const bike = await api.create();
      const body = withValue(replacement(bike.id) as unknown as BikeFields, path, value);
      await expectUnchanged(bike, () => api.request('PUT', `/bikes/${bike.id}`, { json: body }));
    });

    it.each([...NUL_FIELDS, 'handle', 'id'])('when %s contains U+0000', async (path) => {
      const bike = await api.create();
      const body = withValue(replacement(bike.id) as unknown as BikeFields, path, 'nul\u0000inside');
      await expectUnchanged(bike, () => api.request('PUT', `/bikes/${bike.id}`, { json: body }));
    });

    it('when there is no body', async () => {
      const bike = await api.create();
      await expectUnchanged(bike, () => api.request('PUT', `/bikes/${bike.id}`));
    });

    it('when the body is an empty object', async () => {
      const bike = await api.create();
      await expectUnchanged(bike, () => api.request('PUT', `/bikes/${bike.id}`, { json: {} }));
    });

    it.each(['{', '{"title":', 'not json', '[1,]'])('when the JSON is malformed: %s', async (raw) => {
      const bike = await api.create();
      await expectUnchanged(bike, () =>
        api.request('PUT', `/bikes/${bike.id}`, { raw, contentType: 'application/json' }),
      );
    });

    it.each(['[]', 'null', '"text"', '7'])('when the JSON body is %s, not an object', async (raw) => {
      const bike = await api.create();
      await expectUnchanged(bike, () =>
        api.request('PUT', `/bikes/${bike.id}`, { raw, contentType: 'application/json' }),
      );
    });

    it('when a valid body is sent with another content type (it counts as absent)', async () => {
      const bike = await api.create();
      const raw = JSON.stringify(replacement(bike.id));
      await expectUnchanged(bike, () => api.request('PUT', `/bikes/${bike.id}`, { raw, contentType: 'text/plain' }));
    });

    it('when the body is URL-encoded (form values are strings, so the types are wrong)', async () => {
      const bike = await api.create();
      const form = `id=${bike.id}&handle=h&title=t&productType=p&createdAt=c&description=d&vendor=v&availableForSale=true&totalInventory=1`;
      await expectUnchanged(bike, () => api.request('PUT', `/bikes/${bike.id}`, { form }));
    });

    it('when the body at an unknown id is invalid: nothing is created', async () => {
      const id = unknownId();
      const res = await api.request('PUT', `/bikes/${id}`, { json: { ...replacement(id), totalInventory: '5' } });
      expectPlainError(res, 404, 'Not Found');
      expect(await api.find(id)).toBeNull();
    });

    it.each(NOT_UUIDS)('when the path id %p is not a UUID, even with a valid body', async (id) => {
      const before = await api.all();
      const res = await api.request('PUT', `/bikes/${id}`, { json: replacement(id) });
      expectPlainError(res, 404, 'Not Found');
      expect(await api.all()).toEqual(before);
    });
  });

  describe('token checks come first', () => {
    it('without a token it answers 401 and changes nothing', async () => {
      const bike = await api.create();
      await expectUnchanged(
        bike,
        () => api.request('PUT', `/bikes/${bike.id}`, { json: replacement(bike.id), token: null }),
        401,
      );
    });

    it('with a bad token it answers 403 and changes nothing', async () => {
      const bike = await api.create();
      await expectUnchanged(
        bike,
        () => api.request('PUT', `/bikes/${bike.id}`, { json: replacement(bike.id), token: 'x.y.z' }),
        403,
      );
    });

    it('without a token, an invalid body gives 401, not 404', async () => {
      const bike = await api.create();
      const res = await api.request('PUT', `/bikes/${bike.id}`, {
        raw: '{',
        contentType: 'application/json',
        token: null,
      });
      expectPlainError(res, 401, 'Unauthorized');
    });

    it('without a token, a non-UUID id gives 401; with a bad token, 403', async () => {
      expect((await api.request('PUT', '/bikes/not-a-uuid', { json: {}, token: null })).status).toBe(401);
      expect((await api.request('PUT', '/bikes/not-a-uuid', { json: {}, token: 'bad' })).status).toBe(403);
    });

    it('without a token at an unknown id it answers 401 and creates nothing', async () => {
      const id = unknownId();
      expect((await api.request('PUT', `/bikes/${id}`, { json: replacement(id), token: null })).status).toBe(401);
      expect(await api.find(id)).toBeNull();
    });
  });
});
