import { randomInt } from 'node:crypto';
import type { Bike } from '../../src/bikes/bike';
import { client, newBike } from './bikes';

/**
 * `writes` writes through `baseUrl` over a shared set of bikes (creates, replaces, patches, some
 * conditional, and deletes), each counted in `done` once answered.
 */
export async function writer(baseUrl: string, token: string, ids: string[], writes: number, done: { writes: number }) {
  const api = client(baseUrl, token);
  for (let i = 0; i < writes; i++) {
    const id = ids[randomInt(ids.length)];
    const op = randomInt(10);
    let status: number;
    if (op < 3) {
      const created = await api.request('POST', '/bikes/', { body: newBike() });
      status = created.status;
      if (status === 200) ids.push(((await created.json()) as Bike).id);
    } else if (op < 5) {
      status = (await api.request('PUT', `/bikes/${id}`, { body: { ...newBike(), id, handle: `h-${i}` } })).status;
    } else if (op < 8) {
      const current = await api.request('GET', `/bikes/${id}`, { headers: { 'x-read-from': 'primary' } });
      const headers: Record<string, string> = {};
      if (current.status === 200 && op === 7) headers['if-match'] = current.headers.get('etag') as string;
      status = (await api.request('PATCH', `/bikes/${id}`, { body: { totalInventory: randomInt(100) }, headers }))
        .status;
    } else {
      status = (await api.request('DELETE', `/bikes/${id}`)).status;
    }
    expect([200, 404, 412]).toContain(status);
    done.writes++;
  }
}
