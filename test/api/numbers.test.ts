import { randomUUID } from 'node:crypto';
import { type Bike, type BikeFields, expectPlainError, newBike, useApi, withValue } from './helpers';

/**
 * docs/reference/bike.md#numbers: numbers are IEEE-754 doubles. A number reads back as the double
 * nearest to the literal sent; a non-zero literal that would become 0 (underflow) or one that
 * would become infinite has no such double, and the body is refused with the route's bad-body
 * status (400 on create and patch, 404 on replace), wherever in the body it stands.
 */
describe('numbers are IEEE-754 doubles', () => {
  const api = useApi();

  const MARK = '__number_at__';

  /** `fields` as JSON text with number literals, as written, at the given paths. */
  function bodyWith(fields: BikeFields | Record<string, unknown>, literals: Record<string, string>): string {
    let body = fields as BikeFields;
    for (const path of Object.keys(literals)) body = withValue(body, path, MARK + path) as BikeFields;
    let text = JSON.stringify(body);
    for (const [path, literal] of Object.entries(literals)) text = text.replace(`"${MARK}${path}"`, literal);
    return text;
  }

  const NUMBER_PATHS = ['totalInventory', 'priceRange.minPrice.amount', 'priceRange.maxPrice.amount'];
  /** The literal as every number of a bike. */
  const everywhere = (literal: string) => Object.fromEntries(NUMBER_PATHS.map((path) => [path, literal]));

  const send = (method: string, path: string, raw: string) =>
    api.request(method, path, { raw, contentType: 'application/json' });

  /** Literals JSON.parse would silently turn into 0 or ±Infinity. */
  const WITHOUT_DOUBLE = ['1e-400', '-1e-400', '2e-324', '1e400', '-1e400', '1E+400', '1 and 400 zeros'];
  const literalOf = (name: string) => (name === '1 and 400 zeros' ? `1${'0'.repeat(400)}` : name);
  /** Where the number stands: a field, a nested field, and a field the service ignores. */
  const PLACES = ['totalInventory', 'priceRange.maxPrice.amount', 'anUnknownField'];
  const cases = WITHOUT_DOUBLE.flatMap((name) => PLACES.map((place) => [name, place]));

  describe('a number with no nearest double is refused, and nothing is stored', () => {
    it.each(cases)('POST with %s as %s: 400', async (name, place) => {
      const literal = literalOf(name);
      const before = await api.all();
      expectPlainError(await send('POST', '/bikes/', bodyWith(newBike(), { [place]: literal })), 400, 'Bad Request');
      expect(await api.all()).toEqual(before);
    });

    it.each(cases)('PUT of an existing bike with %s as %s: 404, the bike unchanged', async (name, place) => {
      const literal = literalOf(name);
      const bike = await api.create();
      const body = bodyWith(
        { ...newBike({ vendor: 'Replacer' }), id: bike.id, handle: 'replaced' },
        { [place]: literal },
      );
      expectPlainError(await send('PUT', `/bikes/${bike.id}`, body), 404, 'Not Found');
      expect(await api.find(bike.id)).toEqual(bike);
    });

    it.each(cases)('PUT creating a bike with %s as %s: 404, no bike made', async (name, place) => {
      const literal = literalOf(name);
      const id = randomUUID();
      const before = await api.all();
      const body = bodyWith({ ...newBike(), id, handle: 'made' }, { [place]: literal });
      expectPlainError(await send('PUT', `/bikes/${id}`, body), 404, 'Not Found');
      expect(await api.find(id)).toBeNull();
      expect(await api.all()).toEqual(before);
    });

    it.each(cases)('PATCH with %s as %s: 400, the bike unchanged', async (name, place) => {
      const literal = literalOf(name);
      const bike = await api.create();
      const changes = { vendor: 'Patched', priceRange: bike.priceRange };
      expectPlainError(
        await send('PATCH', `/bikes/${bike.id}`, bodyWith(changes, { [place]: literal })),
        400,
        'Bad Request',
      );
      expect(await api.find(bike.id)).toEqual(bike);
    });
  });

  it('refuses such a number like malformed JSON, before looking for the bike: PATCH of a missing bike is 400', async () => {
    const res = await send('PATCH', `/bikes/${randomUUID()}`, '{"totalInventory": 1e-400}');
    expectPlainError(res, 400, 'Bad Request');
  });

  /** Literals that have a nearest double, and that double. */
  const NEAREST: Array<[string, number]> = [
    ['0', 0],
    ['0.0', 0],
    ['-0', 0], // the double -0, which JSON writes as 0
    ['0e10', 0],
    ['-0.000e-999', 0],
    ['1e308', 1e308],
    ['-1.7976931348623157e308', -Number.MAX_VALUE],
    ['5e-324', 5e-324],
    ['3e-324', 5e-324], // nearer to the smallest subnormal than to 0
    ['4.9406564584124654e-324', Number.MIN_VALUE],
    ['123456789012345678901234567890', 1.2345678901234568e29],
    ['9007199254740993', 9007199254740992], // 2^53 + 1: between two doubles, rounded to even
    ['0.1000000000000000055511151231257827021181583404541015625', 0.1],
  ];

  describe('any other number reads back as the double nearest to it', () => {
    /** Asserts every number field of `bike` is `expected` (0 is +0: `toBe` tells -0 apart). */
    function expectNumbers(bike: Bike | null, expected: number): void {
      expect(bike?.totalInventory).toBe(expected);
      expect(bike?.priceRange.minPrice.amount).toBe(expected);
      expect(bike?.priceRange.maxPrice.amount).toBe(expected);
    }

    it.each(NEAREST)('POST with %s: 200, and it reads back as %p', async (literal, expected) => {
      const res = await send('POST', '/bikes/', bodyWith(newBike(), everywhere(literal)));
      expect(res.status).toBe(200);
      expectNumbers(res.json<Bike>(), expected);
      expectNumbers(await api.find(res.json<Bike>().id), expected);
    });

    it.each(NEAREST)('PUT with %s: 200, and it reads back as %p', async (literal, expected) => {
      const bike = await api.create();
      const res = await send(
        'PUT',
        `/bikes/${bike.id}`,
        bodyWith({ ...newBike(), id: bike.id, handle: 'h' }, everywhere(literal)),
      );
      expect(res.status).toBe(200);
      expectNumbers(res.json<Bike>(), expected);
      expectNumbers(await api.find(bike.id), expected);
    });

    it.each(NEAREST)('PATCH with %s: 200, and it reads back as %p', async (literal, expected) => {
      const bike = await api.create();
      const res = await send('PATCH', `/bikes/${bike.id}`, bodyWith(bike, everywhere(literal)));
      expect(res.status).toBe(200);
      expectNumbers(res.json<Bike>(), expected);
      expectNumbers(await api.find(bike.id), expected);
    });

    it('writes a 30-digit integer back as its nearest double, in the shortest form that names it', async () => {
      const res = await send(
        'POST',
        '/bikes/',
        bodyWith(newBike(), { totalInventory: '123456789012345678901234567890' }),
      );
      expect(res.status).toBe(200);
      const read = await api.request('GET', `/bikes/${res.json<Bike>().id}`, { token: null });
      expect(read.text).toContain('"totalInventory":1.2345678901234568e+29');
      expect(read.json<Bike>().totalInventory).toBe(123456789012345680000000000000);
    });
  });

  it('looks only at numbers: a string or a key that reads like 1e-400 or 1e400 is kept as text', async () => {
    const fields = newBike({ title: 'Model 1e-400 \\" 1e400', vendor: '\\', createdAt: '-1e400' });
    const raw = JSON.stringify({ ...fields, '1e400': 1, 'quote"1e-400': '1e-400' });
    const res = await send('POST', '/bikes/', raw);
    expect(res.status).toBe(200);
    const stored = await api.find(res.json<Bike>().id);
    expect(stored).toMatchObject({ title: fields.title, vendor: '\\', createdAt: '-1e400' });
  });
});
