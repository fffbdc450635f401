import { Client as PgClient } from 'pg';
import type { Bike, BikeFields } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import { startTestService, type TestService } from '../support/service';

/**
 * GET /bikes (docs/reference/browse-and-sync.md#paged-listing): the catalog filtered, in one of its orders, a page
 * at a time, each page's `Link` the next one's address. Every sort and filter is checked against
 * the same catalog ordered and filtered here, in JavaScript, from /bikes/all.
 */

/** The string's first 200 characters (code points), as UTF-8: code point order is byte order. */
const key = (text: string) => Buffer.from(Array.from(text).slice(0, 200).join(''));

/** Code point order of two strings' first 200 characters. */
const byKey = (a: string, b: string) => Buffer.compare(key(a), key(b));

const price = (bike: Bike) => bike.priceRange.minPrice;

/** Each order as the decision describes it; ties go by insertion order (the index in /bikes/all). */
const ORDERS: Record<string, (a: Bike, b: Bike) => number> = {
  created: () => 0,
  title: (a, b) => byKey(a.title, b.title),
  price: (a, b) => byKey(price(a).currencyCode, price(b).currencyCode) || price(a).amount - price(b).amount,
};

/** Bikes that make every order and filter matter: equal keys, long strings, LIKE's own characters, prices in two currencies. */
const LONG = 'L'.repeat(300);
const CATALOG: BikeFields[] = [
  newBike({ title: 'Zephyr 9', vendor: 'Apex', productType: 'Road', totalInventory: 0 }),
  newBike({ title: 'alpine', vendor: 'Apex', productType: 'Gravel', availableForSale: false }),
  newBike({ title: 'Árbol', vendor: 'Nord', productType: 'Road', totalInventory: -2 }),
  newBike({ title: '100% fun_bike', vendor: 'Nord', productType: 'Kids' }),
  newBike({ title: `${LONG} b`, vendor: `${LONG}x`, productType: 'Road' }),
  newBike({ title: `${LONG} a`, vendor: `${LONG}y`, productType: 'Road' }),
  newBike({ title: 'Zephyr 9', vendor: 'Apex', productType: 'Road' }),
  newBike({ title: 'back\\slash', vendor: 'Velo', productType: 'Gravel', totalInventory: 3 }),
  newBike({ title: '🚲 emoji', vendor: 'Velo', productType: 'Road' }),
  newBike({ title: '\uffff last BMP', vendor: 'Velo', productType: 'Road' }),
  ...[5, 1200.5, 499.99, 80, 80, 3000].map((amount, i) =>
    newBike({
      title: `Priced ${i}`,
      vendor: i % 2 ? 'Apex' : 'Velo',
      productType: 'Hybrid',
      availableForSale: i !== 3,
      totalInventory: i,
      priceRange: {
        minPrice: { amount, currencyCode: i === 4 ? 'EUR' : 'USD' },
        maxPrice: { amount: amount + 1, currencyCode: 'USD' },
      },
    }),
  ),
];

describe('GET /bikes: browsing, filtered and sorted, a page at a time', () => {
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

  /** Every page from `path`, following Link, and the number of pages. */
  async function everyPage(path: string): Promise<{ bikes: Bike[]; pages: number }> {
    const bikes: Bike[] = [];
    let pages = 0;
    for (let next: string | undefined = path; next !== undefined; pages++) {
      const res = await api.request('GET', next);
      expect({ next, status: res.status }).toEqual({ next, status: 200 });
      const page = (await res.json()) as Bike[];
      bikes.push(...page);
      const link = res.headers.get('link');
      next = link ? (/^<([^>]+)>; rel="next"$/.exec(link) as RegExpExecArray)[1] : undefined;
      if (next) expect(page.length).toBeGreaterThan(0);
    }
    return { bikes, pages };
  }

  /** /bikes/all sorted by `sort`, ties by insertion order. */
  function sorted(sort: string, bikes = all): Bike[] {
    const descending = sort.startsWith('-');
    const compare = ORDERS[descending ? sort.slice(1) : sort];
    const position = new Map(all.map((bike, i) => [bike.id, i]));
    const ascending = [...bikes].sort(
      (a, b) => compare(a, b) || (position.get(a.id) as number) - (position.get(b.id) as number),
    );
    return descending ? ascending.reverse() : ascending;
  }

  const ids = (bikes: Bike[]) => bikes.map((bike) => bike.id);

  it('gives every bike once, 24 a page by default, oldest first, with Link to each next page until the last', async () => {
    const first = await api.request('GET', '/bikes');
    expect(first.status).toBe(200);
    expect(((await first.json()) as Bike[]).length).toBe(Math.min(24, all.length));
    for (const limit of [1, 3, 7, all.length, 250]) {
      const { bikes, pages } = await everyPage(`/bikes?limit=${limit}`);
      expect(ids(bikes)).toEqual(ids(all));
      expect(pages).toBe(Math.max(1, Math.ceil(all.length / limit)));
    }
    // The trailing slash is the same route; the page's bikes are the bytes every route writes.
    const slash = await api.request('GET', '/bikes/?limit=2');
    expect(await slash.text()).toBe(JSON.stringify(all.slice(0, 2)));
  });

  it.each(['created', '-created', 'title', '-title', 'price', '-price'])(
    'sort=%s: pages through the catalog in that order, ties by insertion order',
    async (sort) => {
      expect(ids((await everyPage(`/bikes?sort=${sort}&limit=4`)).bikes)).toEqual(ids(sorted(sort)));
    },
  );

  it('sort=updatedAt: by when each bike last changed, whoever changed it (API or SQL)', async () => {
    const [a, b, c] = all;
    await api.request('PATCH', `/bikes/${b.id}`, { body: { totalInventory: 50 } });
    const sql = new PgClient({ connectionString: svc.databaseUrl });
    await sql.connect();
    try {
      await sql.query('UPDATE bikes SET total_inventory = 51 WHERE id = $1', [c.id]);
      await api.request('PATCH', `/bikes/${a.id}`, { body: { totalInventory: 52 } });
      const newestFirst = ids((await everyPage('/bikes?sort=-updatedAt&limit=5')).bikes);
      expect(newestFirst.slice(0, 3)).toEqual([a.id, c.id, b.id]);
      expect(ids((await everyPage('/bikes?sort=updatedAt&limit=5')).bikes)).toEqual([...newestFirst].reverse());
    } finally {
      await sql.end();
    }
    all = (await (await api.request('GET', '/bikes/all')).json()) as Bike[];
  });

  interface Filter {
    query: string;
    label?: string;
    passes: (bike: Bike) => boolean;
  }
  const FILTER_LIST: Filter[] = [
    { query: 'vendor=Apex', passes: (bike) => bike.vendor === 'Apex' },
    { query: `vendor=${LONG}x`, label: 'vendor=(300 characters)x', passes: (bike) => bike.vendor === `${LONG}x` },
    { query: 'productType=Road', passes: (bike) => bike.productType === 'Road' },
    { query: 'availableForSale=false', passes: (bike) => !bike.availableForSale },
    { query: 'inStock=true', passes: (bike) => bike.totalInventory > 0 },
    { query: 'inStock=false', passes: (bike) => bike.totalInventory <= 0 },
    { query: 'currency=EUR', passes: (bike) => price(bike).currencyCode === 'EUR' },
    {
      query: 'currency=USD&minPrice=80&maxPrice=499.99',
      passes: (bike) => price(bike).currencyCode === 'USD' && price(bike).amount >= 80 && price(bike).amount <= 499.99,
    },
    { query: 'titleContains=%25', passes: (bike) => bike.title.includes('%') },
    { query: 'titleContains=_', passes: (bike) => bike.title.includes('_') },
    { query: 'titleContains=%5C', passes: (bike) => bike.title.includes('\\') },
    { query: 'titleContains=zephyr', passes: (bike) => bike.title.includes('zephyr') },
    {
      query: 'vendor=Velo&productType=Road&inStock=true',
      passes: (bike) => bike.vendor === 'Velo' && bike.productType === 'Road' && bike.totalInventory > 0,
    },
    { query: 'vendor=Nobody', passes: () => false },
  ];
  const FILTERS = FILTER_LIST.map((filter) => ({ ...filter, label: filter.label ?? filter.query }));

  it.each(FILTERS)('$label: exactly the bikes that pass, in every sort', async ({ query, passes }) => {
    for (const sort of ['created', 'title', '-price']) {
      const { bikes } = await everyPage(`/bikes?${query}&sort=${sort}&limit=2`);
      expect({ query, sort, ids: ids(bikes) }).toEqual({ query, sort, ids: ids(sorted(sort, all.filter(passes))) });
    }
  });

  it('answers 400 naming the parameter for a value it cannot take', async () => {
    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=251', 'limit'],
      ['limit=1.5', 'limit'],
      ['limit=ten', 'limit'],
      ['limit=01', 'limit'],
      ['sort=cheapest', 'sort'],
      ['sort=', 'sort'],
      ['availableForSale=yes', 'availableForSale'],
      ['inStock=1', 'inStock'],
      ['minPrice=cheap&currency=USD', 'minPrice'],
      ['minPrice=1e3&currency=USD', 'minPrice'],
      ['minPrice=10', 'currency'],
      ['maxPrice=10', 'currency'],
      ['inStock=true&inStock=false', 'inStock'],
      ['vendor=a&vendor=%00', 'vendor[1]'],
      ['titleContains=a%00', 'titleContains'],
      ['cursor=', 'cursor'],
      ['cursor=not-a-cursor', 'cursor'],
      ['vendr=Apex', 'vendr'],
    ]) {
      const res = await api.request('GET', `/bikes?${query}`);
      expect({ query, status: res.status, field: res.headers.get('x-invalid-field') }).toEqual({
        query,
        status: 400,
        field: `query.${field}`,
      });
    }
    // An unknown parameter whose name is not a plain one is refused without echoing it.
    const odd = await api.request('GET', '/bikes?%0d%0aSet-Cookie:%20x=1=2');
    expect({ status: odd.status, field: odd.headers.get('x-invalid-field') }).toEqual({ status: 400, field: null });
  });

  it('refuses a cursor of another sort, other filters, or altered, with 400: the page would start in the wrong place', async () => {
    const link = (await api.request('GET', '/bikes?vendor=Apex&sort=title&limit=1')).headers.get('link') as string;
    const cursor = new URL(/<([^>]+)>/.exec(link)?.[1] as string, svc.baseUrl).searchParams.get('cursor') as string;
    const withCursor = (query: string) => `/bikes?${query}&cursor=${encodeURIComponent(cursor)}`;
    expect((await api.request('GET', withCursor('vendor=Apex&sort=title&limit=5'))).status).toBe(200);
    const [data, mac] = cursor.split('.');
    const altered = Buffer.from(Buffer.from(data, 'base64url').toString().replace('title', 'price')).toString(
      'base64url',
    );
    for (const path of [
      withCursor('vendor=Apex&sort=price&limit=1'),
      withCursor('vendor=Velo&sort=title&limit=1'),
      withCursor('sort=title&limit=1'),
      withCursor('vendor=Apex&sort=title&limit=1&inStock=true'),
      `/bikes?vendor=Apex&sort=price&cursor=${altered}.${mac}`,
    ]) {
      const res = await api.request('GET', path);
      expect({ path, status: res.status, field: res.headers.get('x-invalid-field') }).toEqual({
        path,
        status: 400,
        field: 'query.cursor',
      });
    }
  });

  it('tags each page: 304 to its own tag until the catalog changes, and a Catalog-Cursor the feed goes on from (not on the 304)', async () => {
    const page = await api.request('GET', '/bikes?sort=title&limit=3');
    const tag = page.headers.get('etag') as string;
    const cursor = page.headers.get('catalog-cursor') as string;
    expect(tag).toMatch(/^W\//);
    const other = await api.request('GET', '/bikes?sort=title&limit=4');
    expect(other.headers.get('etag')).not.toBe(tag);
    const again = await api.request('GET', '/bikes?sort=title&limit=3', { headers: { 'if-none-match': tag } });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe(tag);
    // RFC 9110 15.4.5: a 304 carries the validators, not the representation's metadata.
    expect(again.headers.get('catalog-cursor')).toBeNull();
    expect((await api.request('GET', `/bikes/changes?since=${encodeURIComponent(cursor)}`)).status).toBe(200);
    const created = await api.create(newBike());
    const changed = await api.request('GET', '/bikes?sort=title&limit=3', { headers: { 'if-none-match': tag } });
    expect(changed.status).toBe(200);
    all.push(created);
  });

  it('answers HEAD as GET, without the body', async () => {
    const get = await api.request('GET', '/bikes?limit=2');
    const head = await api.request('HEAD', '/bikes?limit=2');
    expect(head.status).toBe(200);
    for (const header of ['etag', 'link', 'content-length'])
      expect(head.headers.get(header)).toBe(get.headers.get(header));
    expect(await head.text()).toBe('');
  });
});
