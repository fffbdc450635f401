import { randomUUID } from 'node:crypto';
import { expectExactShape, expectPlainError, newBike, useApi } from './helpers';

describe('GET /bikes/by-handle/<handle>', () => {
  const api = useApi();
  const tag = () => randomUUID().slice(0, 8);

  it('when a bike has that handle, it answers 200 with exactly that bike', async () => {
    const bike = await api.create();
    const res = await api.byHandle(bike.handle);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.json()).toEqual(bike);
    expectExactShape(res.json());
  });

  it.each([
    ['Hybrid Bicycle Sentra', 'hybrid-bicycle-sentra'],
    ['Fat  Bike', 'fat--bike'],
    ['ÉLAN Road', 'élan-road'],
  ])('finds the bike titled %p under the handle %p', async (title, handle) => {
    const bike = await api.create(newBike({ title }));
    expect(bike.handle).toBe(handle);
    const res = await api.request('GET', `/bikes/by-handle/${encodeURIComponent(handle)}`, { token: null });
    expect(res.status).toBe(200);
    expect(res.json()).toEqual(bike);
  });

  it('decodes the percent-encoded path: non-ASCII, slash, question mark, hash, percent and space', async () => {
    const title = `Ünï/Côde?Q#H%P ${tag()}`;
    const bike = await api.create(newBike({ title }));
    expect(bike.handle).toBe(title.replaceAll(' ', '-').toLowerCase());
    const res = await api.request('GET', `/bikes/by-handle/${encodeURIComponent(bike.handle)}`, { token: null });
    expect(res.status).toBe(200);
    expect(res.json()).toEqual(bike);
  });

  it('matches the handle exactly: not case-insensitively, not as a prefix, not as a substring', async () => {
    const bike = await api.create(newBike({ title: `Exact Match ${tag()}` }));
    for (const near of [
      bike.handle.toUpperCase(),
      bike.handle.slice(0, -1),
      `${bike.handle}-`,
      bike.handle.slice(1),
      bike.title,
    ]) {
      expect((await api.byHandle(near)).status).toBe(404);
    }
  });

  it('when no bike has that handle, it answers 404 with a plain-text reason', async () => {
    expectPlainError(await api.byHandle(`no-such-handle-${tag()}`), 404, 'Not Found');
  });

  it('when several bikes share a handle, it returns the one created first', async () => {
    const title = `Shared Handle ${tag()}`;
    const first = await api.create(newBike({ title, vendor: 'first' }));
    const second = await api.create(newBike({ title, vendor: 'second' }));
    expect(second.handle).toBe(first.handle);
    expect((await api.byHandle(first.handle)).json()).toEqual(first);

    // Once the first is gone, the next oldest is the first match.
    expect((await api.request('DELETE', `/bikes/${first.id}`)).status).toBe(200);
    expect((await api.byHandle(first.handle)).json()).toEqual(second);
  });

  it('when the first of two bikes sharing a handle is replaced, it is still the one returned', async () => {
    const title = `Replaced First ${tag()}`;
    const first = await api.create(newBike({ title }));
    await api.create(newBike({ title }));
    const body = { ...newBike({ title: 'New Title', vendor: 'replaced' }), id: first.id, handle: first.handle };
    const put = await api.request('PUT', `/bikes/${first.id}`, { json: body });
    expect(put.status).toBe(200);
    expect((await api.byHandle(first.handle)).json()).toEqual(put.json());
  });

  it('finds a bike by a handle set by PATCH, and no longer by its old one', async () => {
    const bike = await api.create();
    const handle = `patched-handle-${tag()}`;
    expect((await api.request('PATCH', `/bikes/${bike.id}`, { json: { handle } })).status).toBe(200);
    expect((await api.byHandle(handle)).json()).toEqual({ ...bike, handle });
    expect((await api.byHandle(bike.handle)).status).toBe(404);
  });

  it('keeps finding a bike by its handle after its title changes: handles are derived on create only', async () => {
    const bike = await api.create();
    expect((await api.request('PATCH', `/bikes/${bike.id}`, { json: { title: `Renamed ${tag()}` } })).status).toBe(200);
    const res = await api.byHandle(bike.handle);
    expect(res.status).toBe(200);
    expect(res.json<{ id: string }>().id).toBe(bike.id);
  });

  it('when the bike was deleted, it answers 404', async () => {
    const bike = await api.create();
    expect((await api.request('DELETE', `/bikes/${bike.id}`)).status).toBe(200);
    expect((await api.byHandle(bike.handle)).status).toBe(404);
  });

  it.each(['%ZZ', '%', 'abc%2', '%E0%A4%A', '%C3%28', '%ED%A0%80', '%FF'])(
    'when the path segment %p is not valid percent-encoded UTF-8, it answers 404',
    async (segment) => {
      const res = await api.request('GET', `/bikes/by-handle/${segment}`, { token: null });
      expectPlainError(res, 404, 'Not Found');
    },
  );

  it('when the handle contains U+0000, which no stored handle can, it answers 404', async () => {
    expectPlainError(await api.request('GET', '/bikes/by-handle/a%00b', { token: null }), 404, 'Not Found');
  });

  it('when the handle is very long, it answers 404, not an error', async () => {
    expect((await api.byHandle('h'.repeat(50_000))).status).toBe(404);
  });

  it('needs no token, and ignores a bad one', async () => {
    const bike = await api.create();
    const res = await api.request('GET', `/bikes/by-handle/${encodeURIComponent(bike.handle)}`, { token: 'garbage' });
    expect(res.json()).toEqual(bike);
  });
});
