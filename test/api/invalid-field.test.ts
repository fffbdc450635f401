import { randomUUID } from 'node:crypto';
import { CLIENT_FIELD_PATHS, type Reply, expectPlainError, newBike, useApi, withValue, without } from './helpers';

/** The header a 400 names its failing field in; the body stays the reason phrase. */
const HEADER = 'x-invalid-field';

function expectBadRequestNaming(res: Reply, field: string | null): void {
  expectPlainError(res, 400, 'Bad Request');
  expect(res.headers.get(HEADER)).toBe(field);
}

describe('X-Invalid-Field: which field a 400 refused', () => {
  const api = useApi();

  describe('POST /bikes/ (create)', () => {
    it.each(CLIENT_FIELD_PATHS)('when %s is missing, it answers 400 naming that path', async (path) => {
      const res = await api.request('POST', '/bikes/', { json: without(newBike(), path) });
      expectBadRequestNaming(res, path);
    });

    it.each([
      ['title', 5],
      ['availableForSale', 'true'],
      ['totalInventory', '5'],
      ['priceRange', []],
      ['priceRange.minPrice', 10],
      ['priceRange.minPrice.amount', '10'],
      ['priceRange.maxPrice.currencyCode', 840],
      ['description', 'with \u0000 in it'],
    ])('when %s has a value it refuses (%p), it answers 400 naming that path', async (path, value) => {
      const res = await api.request('POST', '/bikes/', { json: withValue(newBike(), path, value) });
      expectBadRequestNaming(res, path);
    });

    it('when several fields fail, it names the first in the order of the schema (the order of the bike in responses)', async () => {
      const body = { ...withValue(newBike(), 'priceRange.maxPrice.amount', 'x'), vendor: 1, productType: null };
      expectBadRequestNaming(await api.request('POST', '/bikes/', { json: body }), 'productType');
      expectBadRequestNaming(await api.request('POST', '/bikes/', { json: {} }), 'title');
    });

    it('never names an unknown key: those are ignored, so a bad one next to a bad field names the field, and alone it is a 200', async () => {
      const oddKey = 'evil\r\nSet-Cookie: a=b';
      const refused = await api.request('POST', '/bikes/', {
        json: { [oddKey]: 'x', ...withValue(newBike(), 'priceRange.minPrice.amount', null) },
      });
      expectBadRequestNaming(refused, 'priceRange.minPrice.amount');
      expect(refused.headers.get('set-cookie')).toBeNull();
      const fields = newBike();
      const accepted = await api.request('POST', '/bikes/', { json: { [oddKey]: { deeply: [null] }, ...fields } });
      expect(accepted.status).toBe(200);
      expect(accepted.headers.get(HEADER)).toBeNull();
    });

    it.each([
      ['malformed JSON', '{"title": "Road", ', 'application/json'],
      ['a JSON array', JSON.stringify([newBike()]), 'application/json'],
      ['a JSON string', '"a bike"', 'application/json'],
      ['a media type it does not read', 'title=Road', 'text/plain'],
    ])(
      'when the body is %s, it answers 400 without the header: no field failed, the body did',
      async (_, raw, type) => {
        const res = await api.request('POST', '/bikes/', { raw, contentType: type });
        expectBadRequestNaming(res, null);
      },
    );

    it('when the Idempotency-Key header is not a key, it names the header', async () => {
      const res = await api.request('POST', '/bikes/', {
        json: newBike(),
        headers: { 'idempotency-key': 'two,keys' },
      });
      expectBadRequestNaming(res, 'idempotency-key');
    });

    it('when the request succeeds, the header is absent', async () => {
      const res = await api.request('POST', '/bikes/', { json: newBike() });
      expect(res.status).toBe(200);
      expect(res.headers.get(HEADER)).toBeNull();
    });
  });

  describe('PATCH /bikes/<id>', () => {
    it('when a nested field of the patch is missing or has the wrong type, it answers 400 naming it, and nothing changes', async () => {
      const bike = await api.create();
      const missing = await api.request('PATCH', `/bikes/${bike.id}`, {
        json: { priceRange: { minPrice: bike.priceRange.minPrice } },
      });
      expectBadRequestNaming(missing, 'priceRange.maxPrice');
      const wrong = await api.request('PATCH', `/bikes/${bike.id}`, {
        json: { totalInventory: 3, priceRange: { ...bike.priceRange, minPrice: { amount: 1, currencyCode: false } } },
      });
      expectBadRequestNaming(wrong, 'priceRange.minPrice.currencyCode');
      expect(await api.find(bike.id)).toEqual(bike);
    });

    it('when there is no bike with the id, a bad body is a 404 without the header (the bike is judged first)', async () => {
      const res = await api.request('PATCH', `/bikes/${randomUUID()}`, { json: { totalInventory: '3' } });
      expectPlainError(res, 404, 'Not Found');
      expect(res.headers.get(HEADER)).toBeNull();
    });

    it('when the JSON is malformed, it answers 400 without the header', async () => {
      const bike = await api.create();
      const res = await api.request('PATCH', `/bikes/${bike.id}`, {
        raw: '{"totalInventory": ',
        contentType: 'application/json',
      });
      expectBadRequestNaming(res, null);
    });
  });

  describe('PUT /bikes/<id>', () => {
    it('answers a bad field 404, as every failure of a replace, and does not name it', async () => {
      const bike = await api.create();
      const res = await api.request('PUT', `/bikes/${bike.id}`, { json: { ...bike, totalInventory: 'many' } });
      expectPlainError(res, 404, 'Not Found');
      expect(res.headers.get(HEADER)).toBeNull();
    });
  });

  describe('GET /bikes/search/by-title', () => {
    it.each([
      ['given twice', 'query=a&query=b'],
      ['containing U+0000', 'query=a%00b'],
    ])('when the query parameter is %s, it answers 400 naming the parameter', async (_, search) => {
      const res = await api.request('GET', `/bikes/search/by-title?${search}`, { token: null });
      expectBadRequestNaming(res, 'query.query');
    });
  });

  describe('POST /api/user', () => {
    it('when username is not a string, it answers 400 naming it; malformed JSON names nothing', async () => {
      expectBadRequestNaming(
        await api.request('POST', '/api/user', { json: { username: 5 }, token: null }),
        'username',
      );
      const malformed = await api.request('POST', '/api/user', {
        raw: '{',
        contentType: 'application/json',
        token: null,
      });
      expectBadRequestNaming(malformed, null);
    });
  });

  it('is described on every 400 of the OpenAPI document', async () => {
    const res = await api.request('GET', '/openapi.json', { token: null });
    type Responses = Record<string, { headers?: Record<string, unknown> }>;
    const document = res.json<{
      paths: Record<string, Record<string, { tags: string[]; responses: Responses }>>;
    }>();
    // The API's operations: the operator's routes answer a 400 only from the listener, before any route.
    const operations = Object.values(document.paths)
      .flatMap((item) => Object.values(item))
      .filter(({ tags }) => !tags.includes('operations'));
    // A 400 a route answers (the listener's alone, on PUT, has no header of the API's).
    const badRequests = operations.filter(({ responses }) => responses['400']?.headers);
    expect(badRequests.length).toBeGreaterThan(0);
    for (const { responses } of badRequests) {
      expect(responses['400'].headers?.['X-Invalid-Field']).toEqual({
        description: expect.stringContaining('dotted path'),
        schema: { type: 'string' },
        example: 'priceRange.minPrice.amount',
      });
    }
    for (const { responses } of operations.filter((operation) => operation.responses['404'])) {
      expect(responses['404'].headers?.['X-Invalid-Field']).toBeUndefined();
    }
  });
});
