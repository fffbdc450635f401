import type { Bike, BikeFields } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import { startTestService, type TestService } from '../support/service';
import { writer } from '../support/writers';

/**
 * A shopper's search on GET /bikes (docs/reference/browse-and-sync.md#a-shoppers-search) and several values per
 * filter (docs/reference/browse-and-sync.md#paged-listing): every word, any case, accents ignored, typos by the
 * word's length, the last word as a prefix, relevance first; pages by Link, every match once.
 */

/** Bikes whose words each search below tells apart. A `tag` in every title keeps this file's bikes its own. */
const TAG = 'zq';
const CATALOG: BikeFields[] = [
  newBike({ title: `${TAG} Mountain Explorer`, vendor: 'Trek', productType: 'Mountain', description: 'Trail ready' }),
  newBike({ title: `${TAG} City Cruiser`, vendor: 'Giant', productType: 'City', description: 'A mountain of comfort' }),
  newBike({ title: `${TAG} Corolla Roadster`, vendor: 'Cervélo', productType: 'Road', description: 'Fast and light' }),
  newBike({ title: `${TAG} Vélo Électrique`, vendor: 'Orbea', productType: 'E-Bike', description: 'Pedal assist' }),
  newBike({ title: `${TAG} Mountain Explorer`, vendor: 'Giant', productType: 'Mountain', description: 'Rugged' }),
  newBike({ title: `${TAG} Gravel Grinder`, vendor: 'Trek', productType: 'Gravel', description: 'Mountain passes' }),
];

describe('GET /bikes?q=: a shopper search', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;
  let created: Bike[];

  beforeAll(async () => {
    svc = await startTestService();
    api = client(svc.baseUrl, await svc.token());
    created = [];
    for (const fields of CATALOG) created.push(await api.create(fields));
  });
  afterAll(() => svc.stop());

  const titlesOf = async (query: string) => {
    const res = await api.request('GET', `/bikes?${query}`);
    expect(res.status).toBe(200);
    return ((await res.json()) as Bike[]).map((bike) => `${bike.title}|${bike.vendor}`);
  };

  it('matches every word in any case, the title before the description, ties by insertion order', async () => {
    expect(await titlesOf(`q=${TAG}+MOUNTAIN`)).toEqual([
      `${TAG} Mountain Explorer|Trek`,
      `${TAG} Mountain Explorer|Giant`,
      `${TAG} City Cruiser|Giant`,
      `${TAG} Gravel Grinder|Trek`,
    ]);
  });

  it('ranks two words matched in the title before one matched in the vendor', async () => {
    expect(await titlesOf(`q=${TAG}+giant+mountain`)).toEqual([
      `${TAG} Mountain Explorer|Giant`,
      `${TAG} City Cruiser|Giant`,
    ]);
  });

  it('forgives one typo in a word of 5 to 8 letters, and ranks exact matches first', async () => {
    expect(await titlesOf(`q=${TAG}+moutain+explorer`)).toEqual([
      `${TAG} Mountain Explorer|Trek`,
      `${TAG} Mountain Explorer|Giant`,
    ]);
    // "grindr" (6 letters) is one edit from "grinder"; "trak" (4 letters) takes none.
    expect(await titlesOf(`q=${TAG}+grindr`)).toEqual([`${TAG} Gravel Grinder|Trek`]);
    expect(await titlesOf(`q=${TAG}+trak`)).toEqual([]);
  });

  it('takes the last word as a prefix, as the shopper still types', async () => {
    expect(await titlesOf(`q=${TAG}+corol`)).toEqual([`${TAG} Corolla Roadster|Cervélo`]);
    // Not a word before the last.
    expect(await titlesOf(`q=corol+${TAG}`)).toEqual([]);
  });

  it('ignores accents, in the words and in the bikes', async () => {
    expect(await titlesOf(`q=${TAG}+velo+electrique`)).toEqual([`${TAG} Vélo Électrique|Orbea`]);
    expect(await titlesOf(`q=${TAG}+cervélo`)).toEqual([`${TAG} Corolla Roadster|Cervélo`]);
    expect(await titlesOf(`q=${TAG}+CERVELO`)).toEqual([`${TAG} Corolla Roadster|Cervélo`]);
  });

  it('keeps every other sort with q, and every filter, with several values of one', async () => {
    expect(await titlesOf(`q=${TAG}+mountain&sort=-created`)).toEqual([
      `${TAG} Gravel Grinder|Trek`,
      `${TAG} Mountain Explorer|Giant`,
      `${TAG} City Cruiser|Giant`,
      `${TAG} Mountain Explorer|Trek`,
    ]);
    expect(await titlesOf(`q=${TAG}&vendor=Trek&vendor=Orbea&sort=title`)).toEqual([
      `${TAG} Gravel Grinder|Trek`,
      `${TAG} Mountain Explorer|Trek`,
      `${TAG} Vélo Électrique|Orbea`,
    ]);
    expect(await titlesOf(`q=${TAG}&vendor=Trek&vendor=Giant&productType=City&productType=Gravel`)).toEqual([
      `${TAG} City Cruiser|Giant`,
      `${TAG} Gravel Grinder|Trek`,
    ]);
  });

  it('takes an empty q as none, and answers 400 naming q (query.q) for one too long or with U+0000, or relevance without q', async () => {
    const none = await api.request('GET', `/bikes?q=&vendor=Orbea`);
    expect(none.status).toBe(200);
    expect(((await none.json()) as Bike[]).map((bike) => bike.id)).toEqual([created[3].id]);
    for (const [query, field] of [
      [`q=${'a'.repeat(201)}`, 'q'],
      ['q=a%00b', 'q'],
      ['sort=relevance', 'sort'],
      ['sort=-relevance&q=trek', 'sort'],
      ['vendor=Trek&titleContains=a&titleContains=b', 'titleContains'],
      ['vendor=Trek&vendor=a%00', 'vendor[1]'],
    ]) {
      const res = await api.request('GET', `/bikes?${query}`);
      expect({ query, status: res.status, field: res.headers.get('x-invalid-field') }).toEqual({
        query,
        status: 400,
        field: `query.${field}`,
      });
    }
    expect((await api.request('GET', `/bikes?q=${'a'.repeat(200)}`)).status).toBe(200);
  });

  it('binds a cursor to the whole set of values and to q, in any order of the values', async () => {
    const first = await api.request('GET', `/bikes?q=${TAG}&vendor=Trek&vendor=Giant&limit=1`);
    const link = first.headers.get('link') as string;
    const next = (/^<([^>]+)>; rel="next"$/.exec(link) as RegExpExecArray)[1];
    const cursor = new URLSearchParams(next.split('?')[1]).get('cursor') as string;
    const swapped = await api.request('GET', `/bikes?q=${TAG}&vendor=Giant&vendor=Trek&limit=1&cursor=${cursor}`);
    expect(swapped.status).toBe(200);
    for (const other of [`q=${TAG}&vendor=Trek`, `q=${TAG}+x&vendor=Trek&vendor=Giant`]) {
      const res = await api.request('GET', `/bikes?${other}&cursor=${cursor}`);
      expect({ other, status: res.status, field: res.headers.get('x-invalid-field') }).toEqual({
        other,
        status: 400,
        field: 'query.cursor',
      });
    }
  });

  it('orders many matches, read rank by rank, as few: every rank, ties by insertion order, no other bike, across pages', async () => {
    // Two bikes of each rank (docs/reference/browse-and-sync.md#a-shoppers-search), created in an
    // order of their own: the word as typed, then one edit away ("quakka"), each in the title, the
    // vendor, the product type or the description. Sixteen matches: a page by relevance reads
    // them rank by rank (src/bikes/pages.ts, SAMPLE_MATCHES), not ranked whole.
    const fields = (word: string) => [
      { title: `${word} rider` },
      { title: 'Plain rider', vendor: word },
      { title: 'Plain rider', productType: word },
      { title: 'Plain rider', description: `Meets a ${word}` },
    ];
    const byRank = [...fields('Quokka'), ...fields('Quakka')];
    const order = [5, 0, 7, 2, 4, 1, 6, 3, 3, 6, 1, 4, 2, 7, 0, 5];
    const made: { id: string; rank: number; at: number }[] = [];
    for (const [at, rank] of order.entries()) {
      made.push({ id: (await api.create(newBike(byRank[rank]))).id, rank, at });
    }
    const expected = [...made].sort((a, b) => a.rank - b.rank || a.at - b.at).map(({ id }) => id);
    const seen: string[] = [];
    for (let next: string | undefined = '/bikes?q=quokka&limit=3'; next !== undefined;) {
      const res = await api.request('GET', next);
      expect(res.status).toBe(200);
      seen.push(...((await res.json()) as Bike[]).map((bike) => bike.id));
      const link = res.headers.get('link');
      next = link ? (/^<([^>]+)>; rel="next"$/.exec(link) as RegExpExecArray)[1] : undefined;
    }
    expect(seen).toEqual(expected);
  });

  it('pages by Link under 8 writers, giving every matching bike there throughout once, by relevance and by title', async () => {
    const word = 'pagedword';
    const stay: string[] = [];
    for (let i = 0; i < 40; i++) {
      const where = i % 3 === 0 ? { title: `${word} keep ${i}` } : { description: `${word} kept ${i}` };
      stay.push((await api.create(newBike(where))).id);
    }
    const churn: string[] = [];
    for (let i = 0; i < 8; i++) churn.push((await api.create(newBike({ title: `${word} churn ${i}` }))).id);
    const done = { writes: 0 };
    const token = await svc.token('writer');
    const writers = Array.from({ length: 8 }, () => writer(svc.baseUrl, token, churn, 12, done));
    for (const query of [`q=${word}`, `q=${word}&sort=title`, `q=pagedwo`]) {
      const seen: string[] = [];
      for (let next: string | undefined = `/bikes?${query}&limit=5`; next !== undefined;) {
        const res = await api.request('GET', next);
        expect(res.status).toBe(200);
        seen.push(...((await res.json()) as Bike[]).map((bike) => bike.id));
        const link = res.headers.get('link');
        next = link ? (/^<([^>]+)>; rel="next"$/.exec(link) as RegExpExecArray)[1] : undefined;
      }
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen).toEqual(expect.arrayContaining(stay));
      if (query === `q=${word}`) {
        // Title matches (every third) first.
        const titled = stay.filter((_, i) => i % 3 === 0);
        expect(seen.filter((id) => stay.includes(id)).slice(0, titled.length)).toEqual(titled);
      }
    }
    await Promise.all(writers);
    expect(done.writes).toBe(96);
  });
});
