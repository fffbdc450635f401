import { randomBytes, randomUUID } from 'node:crypto';
import { client, newBike } from '../support/bikes';
import { createTestDatabase } from '../support/databases';
import { readMetrics, valueOf } from '../support/metrics';
import { freePort, spawnService, type ServiceProcess } from '../support/process';
import { startTestService, type TestService } from '../support/service';

/** GET /metrics, read with a real Prometheus text-format parser. */
describe('GET /metrics', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.stop());

  const requests = async (labels: Record<string, string>) =>
    valueOf(await readMetrics(svc.baseUrl), 'http_requests_total', labels);

  it('counts requests by method, route template and status, and the counters move', async () => {
    const api = client(svc.baseUrl, await svc.token());
    const bike = await api.create(newBike());
    const byId = { method: 'GET', route: '/bikes/:id', status: '200' };
    const before = await requests(byId);
    await api.request('GET', `/bikes/${bike.id}`);
    await api.request('GET', `/bikes/${bike.id}`);
    expect(await requests(byId)).toBe(before + 2);

    const missingBefore = await requests({ method: 'GET', route: '/bikes/:id', status: '404' });
    await api.request('GET', `/bikes/${randomUUID()}`);
    expect(await requests({ method: 'GET', route: '/bikes/:id', status: '404' })).toBe(missingBefore + 1);

    const refused = { method: 'POST', route: '/bikes', status: '401' };
    const refusedBefore = await requests(refused);
    await api.request('POST', '/bikes/', { body: newBike(), token: '' });
    expect(await requests(refused)).toBe(refusedBefore + 1);
  });

  it('labels routes by their template, never by the raw path, so the series stay few', async () => {
    for (let i = 0; i < 20; i++) {
      await fetch(`${svc.baseUrl}/bikes/${randomUUID()}`);
      await fetch(`${svc.baseUrl}/no/such/path/${i}`);
    }
    const families = await readMetrics(svc.baseUrl);
    const routes = new Set(
      families.find((f) => f.name === 'http_requests_total')?.metrics.map((m) => m.labels?.route) ?? [],
    );
    expect([...routes].every((route) => route === 'unmatched' || /^\/[\w/:.-]*$/.test(route ?? ''))).toBe(true);
    expect([...routes].some((route) => route?.includes('-'))).toBe(false);
    expect(routes).toContain('unmatched');
  });

  it('has latency histograms, the pool gauges, database errors and the process metrics', async () => {
    await fetch(`${svc.baseUrl}/bikes/all`);
    const families = await readMetrics(svc.baseUrl);
    const names = families.map((f) => f.name);
    // (The parser keeps a histogram's buckets, but not its labels.)
    const histogram = families.find((f) => f.name === 'http_request_duration_seconds');
    expect(histogram?.type).toBe('HISTOGRAM');
    expect(Object.keys(histogram?.metrics[0].buckets ?? {})).toEqual(expect.arrayContaining(['0.005', '+Inf']));
    for (const state of ['total', 'idle', 'waiting']) {
      expect(families.find((f) => f.name === 'db_pool_clients')?.metrics).toEqual(
        expect.arrayContaining([expect.objectContaining({ labels: { pool: 'primary', state } })]),
      );
    }
    expect(valueOf(families, 'db_pool_clients', { pool: 'primary', state: 'total' })).toBeGreaterThan(0);
    expect(names).toEqual(expect.arrayContaining(['db_errors_total', 'db_reads_total', 'db_replica_lag_seconds']));
    expect(names).toEqual(
      expect.arrayContaining([
        'process_cpu_user_seconds_total',
        'process_resident_memory_bytes',
        'nodejs_heap_size_used_bytes',
      ]),
    );
  });
});

describe('GET /metrics with METRICS_PORT', () => {
  let service: ServiceProcess;
  let metricsPort: number;
  beforeAll(async () => {
    metricsPort = await freePort();
    service = await spawnService({
      DATABASE_URL: await createTestDatabase(),
      JWT_SECRET: randomBytes(32).toString('base64url'),
      METRICS_PORT: String(metricsPort),
    });
  });
  afterAll(async () => {
    service.child.kill('SIGTERM');
    expect((await service.exited).code).toBe(0);
  });

  it('serves /metrics on that port alone, and not on the API’s', async () => {
    const families = await readMetrics(`http://127.0.0.1:${metricsPort}`);
    expect(families.map((family) => family.name)).toContain('http_requests_total');
    expect((await fetch(`${service.baseUrl}/metrics`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/bikes/all`)).status).toBe(404);
  });
});
