import { type Bike, expectExactShape, newBike, unknownId, useApi } from './helpers';

/** Each describe block has its own service over a fresh database, so it knows the whole table. */
describe('GET /bikes/all', () => {
  describe('on an empty catalog', () => {
    const api = useApi();

    it('answers 200 with an empty JSON array', async () => {
      const res = await api.request('GET', '/bikes/all', { token: null });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.json()).toEqual([]);
    });
  });

  describe('on a catalog it built itself', () => {
    const api = useApi();
    const created: Bike[] = [];

    beforeAll(async () => {
      for (let i = 0; i < 5; i++) created.push(await api.create(newBike({ title: `Listed ${i}` })));
    });

    it('answers every bike, oldest first (creation order), each exactly as stored', async () => {
      const res = await api.request('GET', '/bikes/all', { token: null });
      expect(res.status).toBe(200);
      expect(res.json()).toEqual(created);
    });

    it('answers each bike with exactly the ten documented fields and no internal columns', async () => {
      const list = await api.all();
      expect(list).toHaveLength(created.length);
      for (const bike of list) expectExactShape(bike);
    });

    it('needs no token, ignores a bad one, and changes nothing when read', async () => {
      const first = await api.request('GET', '/bikes/all', { token: 'garbage' });
      const second = await api.request('GET', '/bikes/all', { token: null });
      expect(first.status).toBe(200);
      expect(first.json()).toEqual(created);
      expect(second.json()).toEqual(created);
    });
  });

  describe('as bikes are written', () => {
    const api = useApi();

    it('keeps creation order through PUT (a replaced bike keeps its place) and PATCH', async () => {
      const [a, b, c] = [await api.create(), await api.create(), await api.create()];
      const replaced = await api.request('PUT', `/bikes/${a.id}`, {
        json: { ...newBike({ title: 'Replaced First' }), id: a.id, handle: 'replaced-first' },
      });
      expect(replaced.status).toBe(200);
      const patched = await api.request('PATCH', `/bikes/${b.id}`, { json: { title: 'Patched Second' } });
      expect(patched.status).toBe(200);
      expect(await api.all()).toEqual([replaced.json(), patched.json(), c]);
    });

    it('lists a bike created by PUT at an unknown id last, and drops a deleted bike', async () => {
      const before = await api.all();
      const id = unknownId();
      const put = await api.request('PUT', `/bikes/${id}`, { json: { ...newBike(), id, handle: 'made-by-put' } });
      expect(put.status).toBe(200);
      expect(await api.all()).toEqual([...before, put.json()]);

      expect((await api.request('DELETE', `/bikes/${before[0].id}`)).status).toBe(200);
      expect(await api.all()).toEqual([...before.slice(1), put.json()]);
    });

    it('lists a bike created after a delete after all the others', async () => {
      const before = await api.all();
      const bike = await api.create();
      expect(await api.all()).toEqual([...before, bike]);
    });
  });

  describe('with more bikes than the server reads at once', () => {
    const api = useApi();
    const count = 1_050;
    const wave = 15;
    /** Bikes made in waves of parallel creates: each wave finishes before the next starts. */
    const waves: Bike[][] = [];

    beforeAll(async () => {
      for (let made = 0; made < count; made += wave) {
        const size = Math.min(wave, count - made);
        waves.push(
          await Promise.all(
            Array.from({ length: size }, (_, i) =>
              api.create(newBike({ title: `Bulk ${made + i}`, totalInventory: made + i })),
            ),
          ),
        );
      }
    });

    /** Every bike once, and each wave after the one before it (the server streams in batches of 1000). */
    function expectWavesInOrder(list: Bike[]): void {
      const created = waves.flat();
      expect(list).toHaveLength(count);
      expect(new Set(list.map((b) => b.id)).size).toBe(count);
      expect([...list].sort((a, b) => a.id.localeCompare(b.id))).toEqual(
        [...created].sort((a, b) => a.id.localeCompare(b.id)),
      );
      const position = new Map(list.map((b, i) => [b.id, i]));
      let lastOfPrevious = -1;
      for (const bikes of waves) {
        const positions = bikes.map((b) => position.get(b.id) as number);
        expect(Math.min(...positions)).toBeGreaterThan(lastOfPrevious);
        lastOfPrevious = Math.max(...positions);
      }
    }

    it('answers all of them, each once, in creation order, as one valid JSON array', async () => {
      const res = await api.request('GET', '/bikes/all', { token: null });
      expect(res.status).toBe(200);
      expectWavesInOrder(res.json<Bike[]>());
    });

    it('answers a search matching all of them in creation order too', async () => {
      expectWavesInOrder(await api.search('Bulk '));
    });
  });
});
