import { randomUUID } from 'node:crypto';
import { NOT_UUIDS, expectPlainError, newBike, unknownId, useApi } from './helpers';

describe('DELETE /bikes/<id>', () => {
  const api = useApi();

  it('answers 200 with exactly { id } of the deleted bike', async () => {
    const bike = await api.create();
    const res = await api.request('DELETE', `/bikes/${bike.id}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.json()).toEqual({ id: bike.id });
  });

  it('removes the bike everywhere: by id, by handle, in the search and in the list', async () => {
    const bike = await api.create(newBike({ title: `Doomed ${randomUUID().slice(0, 8)}` }));
    expect((await api.request('DELETE', `/bikes/${bike.id}`)).status).toBe(200);
    expect(await api.find(bike.id)).toBeNull();
    expect((await api.byHandle(bike.handle)).status).toBe(404);
    expect(await api.search(bike.title)).toEqual([]);
    expect((await api.all()).map((b) => b.id)).not.toContain(bike.id);
  });

  it('removes only that bike', async () => {
    const [a, b, c] = [await api.create(), await api.create(), await api.create()];
    await api.request('DELETE', `/bikes/${b.id}`);
    expect(await api.find(a.id)).toEqual(a);
    expect(await api.find(c.id)).toEqual(c);
    const ours = (await api.all()).filter((x) => [a.id, b.id, c.id].includes(x.id));
    expect(ours).toEqual([a, c]);
  });

  it('deleting twice answers 200, then 404', async () => {
    const bike = await api.create();
    expect((await api.request('DELETE', `/bikes/${bike.id}`)).status).toBe(200);
    expectPlainError(await api.request('DELETE', `/bikes/${bike.id}`), 404, 'Not Found');
  });

  it('when two deletes of one bike race, exactly one answers 200 and the other 404', async () => {
    const bike = await api.create();
    const statuses = (await Promise.all([1, 2, 3].map(() => api.request('DELETE', `/bikes/${bike.id}`)))).map(
      (r) => r.status,
    );
    expect(statuses.sort()).toEqual([200, 404, 404]);
  });

  it('for a well-formed id with no bike, answers 404', async () => {
    expectPlainError(await api.request('DELETE', `/bikes/${unknownId()}`), 404, 'Not Found');
  });

  it('answers the id in the form it is stored, when the path gives it in capitals', async () => {
    const bike = await api.create();
    const res = await api.request('DELETE', `/bikes/${bike.id.toUpperCase()}`);
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ id: bike.id });
    expect(await api.find(bike.id)).toBeNull();
  });

  it.each(NOT_UUIDS)('for the path id %p, which is not a UUID, answers 404', async (id) => {
    expectPlainError(await api.request('DELETE', `/bikes/${id}`), 404, 'Not Found');
  });

  it('ignores a request body', async () => {
    const bike = await api.create();
    const res = await api.request('DELETE', `/bikes/${bike.id}`, { json: { id: unknownId() } });
    expect(res.json()).toEqual({ id: bike.id });
  });

  it('a bike can be made again at a deleted id with PUT', async () => {
    const bike = await api.create();
    await api.request('DELETE', `/bikes/${bike.id}`);
    const res = await api.request('PUT', `/bikes/${bike.id}`, { json: bike });
    expect(res.status).toBe(200);
    expect(await api.find(bike.id)).toEqual(bike);
  });

  describe('token checks come first', () => {
    it('without a token it answers 401 and deletes nothing', async () => {
      const bike = await api.create();
      expectPlainError(await api.request('DELETE', `/bikes/${bike.id}`, { token: null }), 401, 'Unauthorized');
      expect(await api.find(bike.id)).toEqual(bike);
    });

    it('with a bad token it answers 403 and deletes nothing', async () => {
      const bike = await api.create();
      expectPlainError(
        await api.request('DELETE', `/bikes/${bike.id}`, { token: `${api.token.slice(0, -2)}xx` }),
        403,
        'Forbidden: the token is not signed by a key this service trusts',
      );
      expect(await api.find(bike.id)).toEqual(bike);
    });

    it('without a token, an unknown or non-UUID id gives 401, not 404; with a bad token, 403', async () => {
      for (const id of [unknownId(), 'not-a-uuid', '%00']) {
        expect((await api.request('DELETE', `/bikes/${id}`, { token: null })).status).toBe(401);
        expect((await api.request('DELETE', `/bikes/${id}`, { token: 'bad' })).status).toBe(403);
      }
    });
  });
});
