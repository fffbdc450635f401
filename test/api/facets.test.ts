import type { Bike, BikeFields } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import { startTestService, type TestService } from '../support/service';

/**
 * GET /bikes/facets (docs/reference/browse-and-sync.md#facets): the total, each facet's values counted with every
 * filter but its own (disjunctive), the price range per currency; every count checked against a
 * count made here, in JavaScript, of /bikes/all.
 */

const VENDORS = ['Trek', 'Giant', 'Cervélo', 'Orbea'];
const TYPES = ['Road', 'Gravel', 'City'];
const CURRENCIES = ['USD', 'EUR'];
const AMOUNTS = [499.99, 12999, 0.1, 1e-7, 2500.5, 80];

const CATALOG: BikeFields[] = Array.from({ length: 30 }, (_, i) =>
  newBike({
    title: `Facet bike ${i} ${i % 4 === 0 ? 'Aero' : 'Comfort'}`,
    vendor: VENDORS[i % 4],
    productType: TYPES[i % 3],
    availableForSale: i % 5 !== 0,
    totalInventory: i % 7 === 0 ? 0 : i,
    priceRange: {
      minPrice: { amount: AMOUNTS[i % 6], currencyCode: CURRENCIES[i % 2] },
      maxPrice: { amount: 20000, currencyCode: 'USD' },
    },
  }),
);

/**
 * Values longer than the 200 characters of their keys (the facets read the keys, by an index-only
 * scan, and the rare longer values from the table): two vendors whose keys are one, a type.
 */
const LONG_VENDORS = ['Ł'.repeat(200) + ' Racing', 'Ł'.repeat(200) + ' Touring'];
const LONG_TYPE = 'Very long type '.repeat(20);
CATALOG.push(
  ...[0, 1, 2].map((i) =>
    newBike({
      title: `Facet bike long ${i}`,
      vendor: LONG_VENDORS[i % 2],
      productType: i === 2 ? LONG_TYPE : 'Road',
      availableForSale: true,
      totalInventory: i,
      priceRange: {
        minPrice: { amount: 100 + i, currencyCode: 'USD' },
        maxPrice: { amount: 20000, currencyCode: 'USD' },
      },
    }),
  ),
);

type Filters = {
  vendor?: string[];
  productType?: string[];
  availableForSale?: boolean;
  inStock?: boolean;
  currency?: string[];
  minPrice?: number;
  maxPrice?: number;
  aero?: boolean;
};

const FACETS = ['vendor', 'productType', 'availableForSale', 'inStock', 'currency'] as const;
type Facet = (typeof FACETS)[number];
const valueOf = (bike: Bike, facet: Facet): string | boolean =>
  facet === 'vendor'
    ? bike.vendor
    : facet === 'productType'
      ? bike.productType
      : facet === 'availableForSale'
        ? bike.availableForSale
        : facet === 'inStock'
          ? bike.totalInventory > 0
          : bike.priceRange.minPrice.currencyCode;

/** Whether a bike passes the filters, leaving out those `except` names. */
function passes(bike: Bike, filters: Filters, except: string[] = []): boolean {
  const given = (name: keyof Filters) => filters[name] !== undefined && !except.includes(name);
  const amount = bike.priceRange.minPrice.amount;
  return (
    (!given('vendor') || (filters.vendor ?? []).includes(bike.vendor)) &&
    (!given('productType') || (filters.productType ?? []).includes(bike.productType)) &&
    (!given('availableForSale') || bike.availableForSale === filters.availableForSale) &&
    (!given('inStock') || bike.totalInventory > 0 === filters.inStock) &&
    (!given('currency') || (filters.currency ?? []).includes(bike.priceRange.minPrice.currencyCode)) &&
    (!given('minPrice') || amount >= (filters.minPrice ?? 0)) &&
    (!given('maxPrice') || amount <= (filters.maxPrice ?? 0)) &&
    (!filters.aero || bike.title.includes('Aero'))
  );
}

/** The answer GET /bikes/facets must give, counted here. */
function expected(bikes: Bike[], filters: Filters) {
  const facets: Record<string, { value: string | boolean; count: number; selected: boolean }[]> = {};
  for (const facet of FACETS) {
    const counts = new Map<string | boolean, number>();
    for (const bike of bikes.filter((b) => passes(b, filters, [facet]))) {
      counts.set(valueOf(bike, facet), (counts.get(valueOf(bike, facet)) ?? 0) + 1);
    }
    const selected = ([] as (string | boolean)[]).concat(filters[facet] ?? []);
    for (const value of selected) if (!counts.has(value)) counts.set(value, 0);
    facets[facet] = [...counts]
      .map(([value, count]) => ({ value, count, selected: selected.includes(value) }))
      .sort(
        (a, b) =>
          b.count - a.count ||
          (typeof a.value === 'string'
            ? Buffer.compare(Buffer.from(a.value), Buffer.from(String(b.value)))
            : Number(a.value) - Number(b.value)),
      );
  }
  const prices = new Map<string, { currency: string; min: number; max: number }>();
  for (const bike of bikes.filter((b) => passes(b, filters, ['minPrice', 'maxPrice']))) {
    const { amount, currencyCode } = bike.priceRange.minPrice;
    const range = prices.get(currencyCode) ?? { currency: currencyCode, min: amount, max: amount };
    prices.set(currencyCode, {
      currency: currencyCode,
      min: Math.min(range.min, amount),
      max: Math.max(range.max, amount),
    });
  }
  return {
    total: bikes.filter((b) => passes(b, filters)).length,
    facets,
    prices: [...prices.values()].sort((a, b) => (a.currency < b.currency ? -1 : 1)),
  };
}

/** The query string of the filters, each value of a list a parameter of its own. */
function queryOf(filters: Filters): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) {
    if (name === 'aero') params.append('q', 'aero');
    else for (const one of ([] as unknown[]).concat(value)) params.append(name, String(one));
  }
  return params.toString();
}

describe('GET /bikes/facets: counts for a storefront', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;
  let all: Bike[];

  beforeAll(async () => {
    svc = await startTestService();
    api = client(svc.baseUrl, await svc.token());
    for (const fields of CATALOG) await api.create(fields);
    all = (await (await api.request('GET', '/bikes/all')).json()) as Bike[];
  });
  afterAll(() => svc.stop());

  const CASES: Filters[] = [
    {},
    { vendor: ['Trek'] },
    { vendor: ['Trek', 'Giant'], productType: ['Road'] },
    { vendor: ['Nobody'], inStock: true },
    { availableForSale: false, currency: ['EUR'] },
    { currency: ['USD'], minPrice: 1, maxPrice: 3000, productType: ['City', 'Gravel'] },
    { aero: true, vendor: ['Trek', 'Cervélo'], availableForSale: true },
    { vendor: [LONG_VENDORS[0]] },
    { vendor: [LONG_VENDORS[1], 'Trek'], productType: [LONG_TYPE, 'Road'], minPrice: 0, currency: ['USD'] },
  ];

  it.each(CASES)('counts each facet with every filter but its own, as a brute count does: %j', async (filters) => {
    const res = await api.request('GET', `/bikes/facets?${queryOf(filters)}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(expected(all, filters));
  });

  it('gives, for a value selected, a total equal to the count shown for it before', async () => {
    const before = (await (await api.request('GET', '/bikes/facets?productType=Road')).json()) as {
      facets: { vendor: { value: string; count: number }[] };
    };
    for (const { value, count } of before.facets.vendor) {
      const res = await api.request('GET', `/bikes/facets?productType=Road&vendor=${encodeURIComponent(value)}`);
      expect({ value, total: ((await res.json()) as { total: number }).total }).toEqual({ value, total: count });
      const page = await api.request('GET', `/bikes?productType=Road&vendor=${encodeURIComponent(value)}&limit=250`);
      expect(((await page.json()) as Bike[]).length).toBe(count);
    }
  });

  it('answers only the facets asked for, in exactly the documented shape', async () => {
    const res = await api.request('GET', '/bikes/facets?facets=vendor,inStock&vendor=Trek');
    const body = (await res.json()) as { facets: Record<string, unknown> };
    expect(Object.keys(body)).toEqual(['total', 'facets', 'prices']);
    expect(Object.keys(body.facets)).toEqual(['vendor', 'inStock']);
  });

  it('answers 304 to its ETag until the catalog changes', async () => {
    const first = await api.request('GET', '/bikes/facets?vendor=Giant');
    const etag = first.headers.get('etag') as string;
    expect(etag).toMatch(/^W\//);
    expect(
      (await api.request('GET', '/bikes/facets?vendor=Giant', { headers: { 'if-none-match': etag } })).status,
    ).toBe(304);
    const other = await api.request('GET', '/bikes/facets?vendor=Trek', { headers: { 'if-none-match': etag } });
    expect(other.status).toBe(200);
  });

  it('answers 400 naming facets for a facet not one of the five, and changes nothing', async () => {
    for (const [query, field] of [
      ['facets=vendor,color', 'facets'],
      ['facets=', 'facets'],
      ['facets=vendor&facets=inStock', 'facets'],
      ['minPrice=1', 'currency'],
      [`q=${'b'.repeat(201)}`, 'q'],
    ]) {
      const res = await api.request('GET', `/bikes/facets?${query}`);
      expect({ query, status: res.status, field: res.headers.get('x-invalid-field') }).toEqual({
        query,
        status: 400,
        field: `query.${field}`,
      });
    }
    expect(await (await api.request('GET', '/bikes/all')).json()).toEqual(all);
  });
});
