import { NOT_UUIDS, expectExactShape, expectPlainError, newBike, unknownId, useApi } from './helpers';

describe('GET /bikes/<id>', () => {
  const api = useApi();

  it('when the bike exists, it answers 200 with exactly the stored bike and its ten fields', async () => {
    const bike = await api.create();
    const res = await api.request('GET', `/bikes/${bike.id}`, { token: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.json()).toEqual(bike);
    expectExactShape(res.json());
  });

  it('when the id is written in capitals, it finds the same bike (UUIDs are case-insensitive)', async () => {
    const bike = await api.create();
    const res = await api.request('GET', `/bikes/${bike.id.toUpperCase()}`, { token: null });
    expect(res.status).toBe(200);
    expect(res.json()).toEqual(bike);
  });

  it('when no bike has that well-formed id, it answers 404 with a plain-text reason', async () => {
    const res = await api.request('GET', `/bikes/${unknownId()}`, { token: null });
    expectPlainError(res, 404, 'Not Found');
  });

  it('when the bike was deleted, it answers 404', async () => {
    const bike = await api.create();
    expect((await api.request('DELETE', `/bikes/${bike.id}`)).status).toBe(200);
    expect((await api.request('GET', `/bikes/${bike.id}`, { token: null })).status).toBe(404);
  });

  it.each(NOT_UUIDS)('when the id %p is not a UUID, it answers 404', async (id) => {
    const res = await api.request('GET', `/bikes/${id}`, { token: null });
    expectPlainError(res, 404, 'Not Found');
  });

  it('needs no token, and ignores a bad one', async () => {
    const bike = await api.create();
    expect((await api.request('GET', `/bikes/${bike.id}`, { token: 'garbage' })).json()).toEqual(bike);
    expect((await api.request('GET', `/bikes/${bike.id}`, { authorization: 'Bearer' })).status).toBe(200);
  });

  it('changes nothing: reading twice gives the same bike, and the list is unchanged', async () => {
    const bike = await api.create(newBike());
    const listBefore = await api.all();
    await api.request('GET', `/bikes/${bike.id}`, { token: null });
    await api.request('GET', `/bikes/${unknownId()}`, { token: null });
    expect(await api.find(bike.id)).toEqual(bike);
    expect(await api.all()).toEqual(listBefore);
  });
});
