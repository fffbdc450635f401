import { randomUUID } from 'node:crypto';
import { freePort } from '../support/process';
import { apiClient, bike, type Container, engine, imagesFromEnvironment, Stack, whyNoEngine } from './stack';

/** docker-compose.yml, run as the README says: `up`, then `ps`, `logs`, `down` with nothing set. */

let skipReason: string | undefined;
let stack: Stack;
let baseUrl: string;
let healthy: Container[];

beforeAll(async () => {
  skipReason = await whyNoEngine();
  if (skipReason) {
    console.log(`simple.compose.ts skipped: ${skipReason}`);
    return;
  }
  const port = await freePort();
  stack = new Stack('docker-compose.yml', {
    ...imagesFromEnvironment(),
    API_PORT: String(port),
  });
  baseUrl = `http://127.0.0.1:${port}`;
  // The image is built first, so that the time measured below is the stack's own start.
  await stack.compose(['build'], { env: stack.env, timeoutMs: 600_000 });
  const started = Date.now();
  await stack.up();
  healthy = await stack.waitHealthy();
  console.log(`simple.compose.ts: from up to healthy in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}, 900_000);

afterAll(() => stack?.remove(), 60_000);

const engineIt = (name: string, fn: () => Promise<void>, timeout?: number) =>
  it(name, async () => (skipReason ? undefined : fn()), timeout);

describe('docker-compose.yml, started for real', () => {
  engineIt('starts db and api healthy after the one-shot secrets service exits 0', async () => {
    expect(
      healthy
        .map(({ service, state, health }) => ({ service, state, health }))
        .sort((a, b) => a.service.localeCompare(b.service)),
    ).toEqual([
      { service: 'api', state: 'running', health: 'healthy' },
      { service: 'db', state: 'running', health: 'healthy' },
      { service: 'secrets', state: 'exited', health: undefined },
    ]);
  });

  engineIt('creates and reads bikes through the published port', async () => {
    const api = await apiClient(baseUrl);
    const created = await api.create(bike(`Domane ${randomUUID().slice(0, 8)}`));
    expect(created.status).toBe(200);
    const { id, title } = (await created.json()) as { id: string; title: string };
    const read = await api.get(`/bikes/${id}`);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id, title });
  });

  engineIt('keeps /metrics off the published port (it is on the unpublished admin port 9100)', async () => {
    expect((await fetch(`${baseUrl}/metrics`)).status).toBe(404);
    const metrics = await stack.compose([
      'exec',
      '-T',
      'api',
      'node',
      '-e',
      "fetch('http://127.0.0.1:9100/metrics').then(async (r) => console.log(r.status, (await r.text()).includes('http_requests_total')))",
    ]);
    expect(metrics.trim()).toBe('200 true');
    expect((await stack.compose(['port', 'api', '9100'])).trim()).toBe('');
  });

  engineIt('shows no secret in any container’s configuration, and the service refuses none of them', async () => {
    const secrets = await Promise.all(
      ['jwt_secret', 'postgres_password', 'app_db_password'].map((name) =>
        stack.compose(['exec', '-T', 'db', 'cat', `/secrets/${name}`]).then((text) => text.trim()),
      ),
    );
    for (const secret of secrets) expect(secret).toMatch(/^[0-9a-f]{64}$/);
    const inspected = await Promise.all(
      healthy.map(async (c) => JSON.stringify(await engine(`/containers/${c.name}/json`))),
    );
    for (const secret of secrets) for (const text of inspected) expect(text).not.toContain(secret);
  });

  engineIt(
    'runs seed in the running container (exec), and migrate in a one-off one (run --rm)',
    async () => {
      const count = async () => ((await (await fetch(`${baseUrl}/bikes/all`)).json()) as unknown[]).length;
      const before = await count();
      await stack.compose(['exec', '-T', 'api', 'node', 'dist/cli/seed.js', '--count', '5', '--seed', '7']);
      expect(await count()).toBe(before + 5);
      // docker-compose 1.29 links a one-off container to its service's running ones, which podman
      // refuses: `run` is for when the service is stopped (under Docker it works either way).
      await stack.compose(['stop', 'api']);
      const migrated = await stack.compose(['run', '--rm', 'api', 'node', 'dist/cli/migrate.js'], { env: stack.env });
      expect(migrated).toMatch(/up to date|applied/);
      await stack.up();
      await stack.waitHealthy();
      expect(await count()).toBe(before + 5);
    },
    180_000,
  );

  engineIt(
    'answers ps, logs and down with no variable set, and down -v leaves nothing behind',
    async () => {
      const ps = await stack.compose(['ps']);
      expect(ps).toMatch(/_api_1 .*Up .*\(healthy\)/);
      expect(ps).toMatch(/_db_1 .*Up .*\(healthy\)/);
      const logs = await stack.compose(['logs', '--no-color', 'api']);
      expect(logs).toContain('listening on http://localhost:3000');
      await stack.compose(['down', '-v']);
      expect(await stack.leftovers()).toEqual([]);
    },
    120_000,
  );
});
