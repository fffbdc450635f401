import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { apiClient, bike, engine, noEngineReason, startStack, type StartedStack } from './stack';

/** docker-compose.yml, run as the README says: `up`, then `ps`, `logs`, `down` with nothing set but the project (COMPOSE_PROJECT_NAME, as deploy/compose-project.sh sets it). */

if (noEngineReason) console.log(`simple.compose.ts skipped: ${noEngineReason}`);

(noEngineReason ? describe.skip : describe)('docker-compose.yml, started for real', () => {
  let started: StartedStack;
  beforeAll(async () => {
    started = await startStack('docker-compose.yml');
  });
  afterAll(() => started?.stack.remove(), 60_000);

  it('starts db and api healthy after the one-shot secrets and migrate services exit 0', async () => {
    expect(
      started.healthy
        .map(({ service, state, health, exitCode }) => ({ service, state, health, exitCode }))
        .sort((a, b) => a.service.localeCompare(b.service)),
    ).toEqual([
      { service: 'api', state: 'running', health: 'healthy', exitCode: undefined },
      { service: 'db', state: 'running', health: 'healthy', exitCode: undefined },
      { service: 'migrate', state: 'exited', health: undefined, exitCode: 0 },
      { service: 'secrets', state: 'exited', health: undefined, exitCode: 0 },
    ]);
    expect(await started.stack.compose(['logs', '--no-color', 'migrate'])).toMatch(/applied \d+ migration\(s\)/);
  });

  it('gives the api container only its own secrets: the superuser’s password and connection string are not in it', async () => {
    const { stack } = started;
    expect((await stack.compose(['exec', '-T', 'api', 'ls', '-A', '/secrets'])).split(/\s+/).filter(Boolean)).toEqual([
      'database_url',
      'jwt_secret',
    ]);
    const superuserPassword = (await stack.compose(['exec', '-T', 'db', 'cat', '/secrets/postgres_password'])).trim();
    expect(superuserPassword).toMatch(/^[0-9a-f]{64}$/);
    // Everything the api's user can read of its secrets, and its environment (compared, never printed).
    const readable = await stack.compose(['exec', '-T', 'api', 'sh', '-c', 'cat /secrets/*; env']);
    expect(readable.includes('postgresql://bike_catalog:')).toBe(true);
    expect(readable.includes(superuserPassword)).toBe(false);
    expect(readable.includes('postgresql://postgres:')).toBe(false);
    // ... and the volume that holds them is not mounted there at all.
    const { Mounts } = await engine<{ Mounts: { Type: string; Name?: string; Destination: string }[] }>(
      `/containers/${started.healthy.find((c) => c.service === 'api')?.name}/json`,
    );
    expect(Mounts.filter((mount) => mount.Type === 'volume').map((mount) => mount.Destination)).toEqual(['/secrets']);
    expect(Mounts.find((mount) => mount.Destination === '/secrets')?.Name).toMatch(/_api-secrets$/);
  });

  it('creates and reads bikes through the published port', async () => {
    const api = await apiClient(started.baseUrl);
    const created = await api.create(bike(`Domane ${randomUUID().slice(0, 8)}`));
    expect(created.status).toBe(200);
    const { id, title } = (await created.json()) as { id: string; title: string };
    const read = await api.get(`/bikes/${id}`);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id, title });
  });

  it("runs docs/reporting.md's report from the host: psql on the published port with the stack's superuser password", async () => {
    const { stack } = started;
    const password = (await stack.compose(['exec', '-T', 'db', 'cat', '/secrets/postgres_password'])).trim();
    const port = (await stack.compose(['port', 'db', '5432'])).trim().split(':').pop() ?? '';
    const { stdout } = await promisify(execFile)(
      'psql',
      [
        '-h',
        '127.0.0.1',
        '-p',
        port,
        '-U',
        'postgres',
        '-X',
        '-A',
        '-t',
        '-f',
        'test/ops/reports/stock-value.sql',
        'bikes',
      ],
      { env: { ...process.env, PGPASSWORD: password } },
    );
    expect(stdout).toMatch(/^USD\|/m);
  });

  it('keeps /metrics off the published port (it is on the unpublished admin port 9100, inside the network)', async () => {
    expect((await fetch(`${started.baseUrl}/metrics`)).status).toBe(404);
    // By the service's name in the stack's network, as Prometheus would scrape it: not loopback.
    const metrics = await started.stack.compose([
      'exec',
      '-T',
      'api',
      'node',
      '-e',
      "fetch('http://api:9100/metrics').then(async (r) => console.log(r.status, (await r.text()).includes('http_request_duration_seconds_count')))",
    ]);
    expect(metrics.trim()).toBe('200 true');
    expect((await started.stack.compose(['port', 'api', '9100'])).trim()).toBe('');
  });

  it('keeps every secret out of every container’s configuration', async () => {
    const read = (service: string, name: string) =>
      started.stack.compose(['exec', '-T', service, 'cat', `/secrets/${name}`]).then((text) => text.trim());
    const secrets = await Promise.all([
      read('api', 'jwt_secret'),
      read('db', 'postgres_password'),
      read('db', 'app_db_password'),
    ]);
    for (const secret of secrets) expect(secret).toMatch(/^[0-9a-f]{64}$/);
    const inspected = await Promise.all(
      started.healthy.map(async (c) => JSON.stringify(await engine(`/containers/${c.name}/json`))),
    );
    for (const secret of secrets) for (const text of inspected) expect(text.includes(secret)).toBe(false);
  });

  it('runs seed in the running api container (exec), and the migrations again in a one-off migrate (run --rm)', async () => {
    const count = async () => ((await (await fetch(`${started.baseUrl}/bikes/all`)).json()) as unknown[]).length;
    const before = await count();
    await started.stack.compose(['exec', '-T', 'api', 'node', 'dist/cli/seed.js', '--count', '5', '--seed', '7']);
    expect(await count()).toBe(before + 5);
    const migrated = await started.stack.compose(['run', '--rm', 'migrate'], { env: started.stack.env });
    expect(migrated).toContain('database is up to date');
    expect(await count()).toBe(before + 5);
  });

  it('closes issuance as docs/scaling-and-containers.md says: after `TOKEN_ISSUANCE=closed up -d`, POST /api/user is 403 and a token from `exec api node dist/cli/token.js` writes', async () => {
    const { stack } = started;
    await stack.compose(['up', '-d'], { env: { ...stack.env, TOKEN_ISSUANCE: 'closed' } });
    await stack.waitHealthy();
    try {
      expect((await fetch(`${started.baseUrl}/api/user`, { method: 'POST' })).status).toBe(403);
      const printed = await stack.compose(['exec', '-T', 'api', 'node', 'dist/cli/token.js', '--username', 'shop-ops']);
      const token = /[\w-]+\.[\w-]+\.[\w-]+/.exec(printed)?.[0];
      const created = await fetch(`${started.baseUrl}/bikes/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(bike(`Checkpoint ${randomUUID().slice(0, 8)}`)),
      });
      expect(created.status).toBe(200);
    } finally {
      await stack.up();
      await stack.waitHealthy();
    }
  });

  it('answers ps, logs and down with no variable set, and down -v leaves nothing behind', async () => {
    const ps = await started.stack.compose(['ps']);
    expect(ps).toMatch(/_api_1 .*Up .*\(healthy\)/);
    expect(ps).toMatch(/_db_1 .*Up .*\(healthy\)/);
    const logs = await started.stack.compose(['logs', '--no-color', 'api']);
    expect(logs).toContain('listening on http://localhost:3000');
    expect(logs).not.toContain('Warning');
    await started.stack.compose(['down', '-v']);
    expect(await started.stack.leftovers()).toEqual([]);
  });
});
