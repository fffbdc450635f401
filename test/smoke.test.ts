import { client, newBike } from './support/bikes';
import { startTestService, type TestService } from './support/service';

describe('the service, end to end', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.stop());

  it('creates a bike with a token and reads it back by id, handle and title', async () => {
    const api = client(svc.baseUrl, await svc.token());
    const fields = newBike();
    const created = await api.create(fields);
    expect(created).toEqual({
      id: expect.any(String),
      handle: fields.title.replaceAll(' ', '-').toLowerCase(),
      ...fields,
    });

    const byId = await api.request('GET', `/bikes/${created.id}`);
    expect(byId.status).toBe(200);
    expect(await byId.json()).toEqual(created);

    const byHandle = await api.request('GET', `/bikes/by-handle/${created.handle}`);
    expect(await byHandle.json()).toEqual(created);

    const search = await api.request('GET', `/bikes/search/by-title?query=${encodeURIComponent(fields.title)}`);
    expect(await search.json()).toEqual([created]);

    const all = await api.request('GET', '/bikes/all');
    expect(await all.json()).toEqual([created]);
  });
});
