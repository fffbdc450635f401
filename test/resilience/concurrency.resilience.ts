import type { Bike, BikeFields } from '../../src/bikes/bike';
import { CLIENT_FIELDS, client, type Client, newBike } from '../support/bikes';
import { startTestService, type TestService } from '../support/service';

/**
 * Races (docs/reference/reads-and-writes.md#partial-update-patch): parallel creates, parallel PATCHes of different
 * fields of one bike, and PUT, PATCH and DELETE racing on one id. No 5xx, nothing lost, nothing half-written.
 */

type Field = (typeof CLIENT_FIELDS)[number];

/** A value for `field` that names the write it came from, so the final row can be traced. */
function taggedValue(field: Field | 'handle', tag: string, n: number): unknown {
  switch (field) {
    case 'availableForSale':
      return n % 2 === 0;
    case 'totalInventory':
      return n;
    case 'priceRange':
      return { minPrice: { amount: n, currencyCode: tag }, maxPrice: { amount: n + 0.5, currencyCode: tag } };
    default:
      return tag;
  }
}

/** A full bike body all of whose fields carry `tag`. */
function taggedBike(tag: string, n: number): BikeFields {
  return Object.fromEntries(CLIENT_FIELDS.map((f) => [f, taggedValue(f, tag, n)])) as unknown as BikeFields;
}

describe('races', () => {
  let svc: TestService;
  let api: Client;

  beforeAll(async () => {
    svc = await startTestService();
    api = client(svc.baseUrl, await svc.token());
  });
  afterAll(() => svc?.stop());

  describe('POST /bikes/', () => {
    it('when 200 creates arrive at once, all land, with distinct ids, and read back as acknowledged', async () => {
      const sent = Array.from({ length: 200 }, (_, i) => newBike({ title: `Parallel Bike ${i}` }));
      const responses = await Promise.all(sent.map((fields) => api.request('POST', '/bikes/', { body: fields })));
      expect(responses.map((r) => r.status)).toEqual(sent.map(() => 200));
      const created = (await Promise.all(responses.map((r) => r.json()))) as Bike[];
      expect(new Set(created.map((b) => b.id)).size).toBe(200);
      created.forEach((bike, i) => expect(bike).toEqual({ id: bike.id, handle: `parallel-bike-${i}`, ...sent[i] }));

      const all = (await (await api.request('GET', '/bikes/search/by-title?query=Parallel%20Bike')).json()) as Bike[];
      const byId = (bikes: Bike[]) => [...bikes].sort((a, b) => a.id.localeCompare(b.id));
      expect(byId(all)).toEqual(byId(created));
    });
  });

  describe('PATCH /bikes/<id>', () => {
    it('when PATCHes of different fields of one bike run at once, none undoes another', async () => {
      const bike = await api.create();
      const fields = [...CLIENT_FIELDS, 'handle'] as const;
      for (let round = 1; round <= 20; round++) {
        const patches = fields.map((field, i) => ({
          [field]: taggedValue(field as Field, `round-${round}-${field}`, round * 100 + i),
        }));
        const responses = await Promise.all(patches.map((body) => api.request('PATCH', `/bikes/${bike.id}`, { body })));
        expect(responses.map((r) => r.status)).toEqual(patches.map(() => 200));
        const final = (await (await api.request('GET', `/bikes/${bike.id}`)).json()) as Bike;
        expect(final).toEqual({ id: bike.id, ...Object.assign({}, ...patches) });
      }
    });
  });

  describe('PUT, PATCH and DELETE on one id', () => {
    it('when they race, no request gets a 5xx and the row is never half-written', async () => {
      const statuses = new Map<string, number>();
      for (let round = 0; round < 25; round++) {
        const original = await api.create(taggedBike(`orig-${round}`, 0));
        const id = original.id;
        const puts = Array.from({ length: 4 }, (_, i) => ({
          id,
          handle: `put-${round}-${i}`,
          ...taggedBike(`put-${round}-${i}`, i + 1),
        }));
        const patches = CLIENT_FIELDS.map((field, i) => ({
          [field]: taggedValue(field, `patch-${round}-${field}`, 100 + i),
        }));
        const requests: Array<[string, unknown?]> = [
          ...puts.map((body): [string, unknown] => ['PUT', body]),
          ...patches.map((body): [string, unknown] => ['PATCH', body]),
          ['DELETE'],
          ['DELETE'],
        ];
        // Shuffle, so every order of arrival gets a chance.
        requests.sort(() => Math.random() - 0.5);
        const answers = await Promise.all(
          requests.map(async ([method, body]) => {
            const res = await api.request(method, `/bikes/${id}`, { body });
            statuses.set(`${method} ${res.status}`, (statuses.get(`${method} ${res.status}`) ?? 0) + 1);
            return {
              method,
              body,
              status: res.status,
              json: res.status === 200 ? ((await res.json()) as Bike) : undefined,
            };
          }),
        );
        for (const answer of answers) {
          expect(answer.status).toBeLessThan(500);
          const allowed = { PUT: [200], PATCH: [200, 404], DELETE: [200, 404] }[answer.method]!;
          expect(allowed).toContain(answer.status);
          if (answer.method === 'PUT') expect(answer.json).toEqual(answer.body);
          if (answer.method === 'PATCH' && answer.json) expectWhole(answer.json, round);
        }
        const res = await api.request('GET', `/bikes/${id}`);
        expect([200, 404]).toContain(res.status);
        if (res.status === 200) expectWhole((await res.json()) as Bike, round);
        // One row at most for the id, and the list agrees with the lookup.
        const listed = ((await (await api.request('GET', '/bikes/all')).json()) as Bike[]).filter((b) => b.id === id);
        expect(listed.length).toBe(res.status === 200 ? 1 : 0);
      }
      console.log(`races: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
      expect([...statuses.keys()].filter((key) => / 5\d\d$/.test(key))).toEqual([]);
    });

    it('when PUTs race to create the same absent id, all answer 200 and one whole row results', async () => {
      for (let round = 0; round < 20; round++) {
        const id = crypto.randomUUID();
        const puts = Array.from({ length: 6 }, (_, i) => ({
          id,
          handle: `put-${round}-${i}`,
          ...taggedBike(`put-${round}-${i}`, i + 1),
        }));
        const responses = await Promise.all(puts.map((body) => api.request('PUT', `/bikes/${id}`, { body })));
        expect(responses.map((r) => r.status)).toEqual(puts.map(() => 200));
        const final = (await (await api.request('GET', `/bikes/${id}`)).json()) as Bike;
        expect(puts).toContainEqual(final);
        const listed = ((await (await api.request('GET', '/bikes/all')).json()) as Bike[]).filter((b) => b.id === id);
        expect(listed).toEqual([final]);
      }
    });

    /**
     * Every field comes from one write: the original create, one PUT, or a PATCH of that field;
     * and all the fields that come from a create or PUT come from the same one (a PUT is never
     * half applied). priceRange's four values always travel together.
     */
    function expectWhole(bike: Bike, round: number): void {
      const origins = new Set<string>();
      for (const field of CLIENT_FIELDS) {
        if (field === 'availableForSale' || field === 'totalInventory') continue; // not tagged
        const value = field === 'priceRange' ? bike.priceRange.minPrice.currencyCode : (bike[field] as string);
        if (field === 'priceRange') {
          expect(bike.priceRange.maxPrice.currencyCode).toBe(value);
          expect(bike.priceRange.maxPrice.amount).toBe(bike.priceRange.minPrice.amount + 0.5);
        }
        if (value === `patch-${round}-${field}`) continue;
        expect(value).toMatch(new RegExp(`^(orig-${round}|put-${round}-\\d)$`));
        origins.add(value);
      }
      expect(origins.size).toBeLessThanOrEqual(1);
    }
  });
});
