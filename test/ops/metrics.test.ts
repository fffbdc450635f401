import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { client, newBike } from '../support/bikes';
import { createTestDatabase } from '../support/databases';
import { readMetrics, seriesValue, valueOf } from '../support/metrics';
import { freePort, launchService, spawnService, type ServiceProcess } from '../support/process';
import { startTestService, type TestService } from '../support/service';

/** An address as /proc/net/tcp{,6} print it (hex, each 32-bit word in host order), in its usual form. */
function addressOf(hex: string): string {
  const bytes = Buffer.from(hex, 'hex');
  for (let word = 0; word < bytes.length; word += 4) bytes.writeUInt32BE(bytes.readUInt32LE(word), word);
  if (bytes.length === 4) return [...bytes].join('.');
  const groups = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2).toString(16));
  return new URL(`http://[${groups.join(':')}]`).hostname.slice(1, -1);
}

/** The addresses the process `pid` listens on at TCP `port`, as the kernel lists its sockets. */
function listeningAddresses(pid: number, port: number): string[] {
  const fds = fs.readdirSync(`/proc/${pid}/fd`).map((fd) => {
    try {
      return fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      return ''; // closed meanwhile
    }
  });
  const inodes = new Set(fds.flatMap((link) => /^socket:\[(\d+)\]$/.exec(link)?.[1] ?? []));
  return ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((table) =>
    fs
      .readFileSync(table, 'utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      // local address, state (0A: LISTEN), inode
      .filter((fields) => fields.length > 9 && fields[3] === '0A' && inodes.has(fields[9]))
      .map((fields) => fields[1].split(':'))
      .filter(([, hexPort]) => parseInt(hexPort, 16) === port)
      .map(([hexAddress]) => addressOf(hexAddress)),
  );
}

/** GET /metrics, read with a real Prometheus text-format parser. */
describe('GET /metrics', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.stop());

  const requests = (labels: Record<string, string>) =>
    seriesValue(svc.baseUrl, 'http_request_duration_seconds_count', labels);

  it('counts requests by method, route template and status in the latency histogram, and the counts move', async () => {
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
    const text = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    const routes = new Set(
      [...text.matchAll(/^http_request_duration_seconds_count\{.*route="([^"]*)".*\} /gm)].map((m) => m[1]),
    );
    expect([...routes].every((route) => route === 'unmatched' || /^\/[\w/:.-]*$/.test(route ?? ''))).toBe(true);
    expect([...routes].some((route) => route?.includes('-'))).toBe(false);
    expect(routes).toContain('unmatched');
  });

  it("has the buckets docs/operations.md's p99 query names, which the query reads by `le`", async () => {
    await fetch(`${svc.baseUrl}/bikes/all`);
    const guide = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'operations.md'), 'utf8');
    const section = guide.slice(guide.indexOf('- **p99 latency.**')).split(/\n- /)[0];
    const listed = /buckets of ([^(]*)\(/.exec(section.replace(/\s+/g, ' '))?.[1] ?? '';
    // "1, 2.5, 5, ... and 500 ms, 1, 2.5, 5 and 10 s" in seconds.
    const seconds = listed
      .split(/ ms,? /)
      .flatMap((part, i) => [...part.matchAll(/[\d.]+/g)].map(([n]) => (i === 0 ? Number(n) / 1000 : Number(n))));
    const histogram = (await readMetrics(svc.baseUrl)).find((f) => f.name === 'http_request_duration_seconds');
    // (An object's keys: integers first, so in order of value.)
    const buckets = Object.keys(histogram?.metrics[0].buckets ?? {})
      .filter((le) => le !== '+Inf')
      .map(Number)
      .sort((a, b) => a - b);
    expect(seconds).toEqual(buckets);
    expect(section).toContain(
      'histogram_quantile(0.99, sum by (route, le) (rate(http_request_duration_seconds_bucket[5m])))',
    );
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
    expect(families.map((family) => family.name)).toContain('http_request_duration_seconds');
    expect((await fetch(`${service.baseUrl}/metrics`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/bikes/all`)).status).toBe(404);
  });

  it('listens on 127.0.0.1 only when METRICS_HOST is not set: the kernel lists no other address for it', () => {
    expect(listeningAddresses(service.child.pid as number, metricsPort)).toEqual(['127.0.0.1']);
  });
});

describe('METRICS_HOST', () => {
  it('binds the metrics listener to the address it names (0.0.0.0, as the compose stacks set it)', async () => {
    const metricsPort = await freePort();
    const service = await spawnService({
      DATABASE_URL: await createTestDatabase(),
      JWT_SECRET: randomBytes(32).toString('base64url'),
      METRICS_PORT: String(metricsPort),
      METRICS_HOST: '0.0.0.0',
    });
    try {
      expect(listeningAddresses(service.child.pid as number, metricsPort)).toEqual(['0.0.0.0']);
      expect((await readMetrics(`http://127.0.0.1:${metricsPort}`)).length).toBeGreaterThan(0);
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });

  it.each([
    [
      'a name, not an address',
      { METRICS_PORT: '9100', METRICS_HOST: 'metrics.example' },
      'METRICS_HOST must be an IP address to listen on (such as 0.0.0.0), got "metrics.example"',
    ],
    ['without METRICS_PORT', { METRICS_HOST: '0.0.0.0' }, 'METRICS_HOST goes with METRICS_PORT, which is not set'],
  ])('%s: the service refuses to start with one line', async (_case, given, line) => {
    const service = await launchService({
      DATABASE_URL: await createTestDatabase(),
      JWT_SECRET: randomBytes(32).toString('base64url'),
      ...given,
    });
    expect(await service.exited).toEqual({ code: 1, signal: null });
    expect(service.errors()).toBe(`bike catalog: ${line}\n`);
  });
});
