import { randomUUID } from 'node:crypto';
import { waitFor } from '../support/wait';
import { apiClient, bike, noEngineReason, startStack, type StartedStack } from './stack';

/**
 * deploy/bike-catalog-scaled/docker-compose.yml started for real: PostgreSQL, its streaming
 * replica, PgBouncer, two instances of the service and nginx in front of them.
 */

/** Runs SQL in a service's container as the superuser, over its socket; the rows, unaligned. */
const sql = async ({ stack }: StartedStack, service: string, query: string) =>
  (await stack.compose(['exec', '-T', service, 'psql', '-U', 'postgres', '-d', 'bikes', '-Atc', query])).trim();

/** Polls `probe` every half second until it returns true. */
const eventually = (what: string, probe: () => Promise<boolean>) =>
  waitFor(what, async () => (await probe()) || undefined, { everyMs: 500 });

/** Sends `count` reads through nginx, each with its own request id; which api containers logged one. */
async function instancesAnswering({ stack, baseUrl }: StartedStack, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => `compose-${randomUUID()}`);
  for (const id of ids) {
    const res = await fetch(`${baseUrl}/bikes/all`, { headers: { 'x-request-id': id } });
    expect(res.status).toBe(200);
  }
  const logs = await stack.compose(['logs', '--no-color', 'api']);
  const answering = new Set<string>();
  for (const line of logs.split('\n')) {
    const container = /^(api_\d+)\s+\|/.exec(line)?.[1];
    if (container && ids.some((id) => line.includes(id))) answering.add(container);
  }
  return [...answering].sort();
}

if (noEngineReason) console.log(`scaled.compose.ts skipped: ${noEngineReason}`);

(noEngineReason ? describe.skip : describe)('the scaled stack, started for real', () => {
  let started: StartedStack;
  beforeAll(async () => {
    started = await startStack('deploy/bike-catalog-scaled/docker-compose.yml');
  });
  afterAll(() => started?.stack.remove(), 60_000);

  it('starts every service healthy: db, replica, pgbouncer, two api instances, nginx, after secrets and migrate exit 0', async () => {
    const states = started.healthy
      .map(({ service, state, health, exitCode }) => `${service} ${state} ${health ?? exitCode}`)
      .sort();
    expect(states).toEqual([
      'api running healthy',
      'api running healthy',
      'db running healthy',
      'lb running healthy',
      'migrate exited 0',
      'pgbouncer running healthy',
      'replica running healthy',
      'secrets exited 0',
    ]);
  });

  it('gives each container only the secrets it needs: the api, PgBouncer and the replica theirs alone', async () => {
    const secretsIn = async (service: string, index = 1) =>
      (await started.stack.compose(['exec', '-T', '--index', String(index), service, 'ls', '-A', '/secrets']))
        .split(/\s+/)
        .filter(Boolean);
    for (const index of [1, 2]) {
      expect(await secretsIn('api', index)).toEqual(['database_replica_url', 'database_url', 'jwt_secret']);
    }
    expect(await secretsIn('pgbouncer')).toEqual(['app_db_password']);
    expect(await secretsIn('replica')).toEqual(['replication_password']);
  });

  it('creates and reads bikes through nginx, and both instances answer', async () => {
    const api = await apiClient(started.baseUrl);
    const created = await api.create(bike(`Tarmac ${randomUUID().slice(0, 8)}`));
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: string };
    // Reads go to the replica, which may not have replayed the create yet: a client that must
    // read its own write asks for the primary (docs/scaling-and-containers.md).
    const read = await api.get(`/bikes/${id}`, { 'x-read-from': 'primary' });
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id });
    expect(await instancesAnswering(started, 20)).toHaveLength(2);
  });

  it('streams to the replica through its slot, and a write reaches it', async () => {
    expect(await sql(started, 'db', 'SELECT state FROM pg_stat_replication')).toBe('streaming');
    expect(await sql(started, 'db', 'SELECT slot_name, active FROM pg_replication_slots')).toBe('replica|t');
    const api = await apiClient(started.baseUrl);
    const { id } = (await (await api.create(bike(`Aethos ${randomUUID().slice(0, 8)}`))).json()) as { id: string };
    await eventually(
      'the new bike on the replica',
      async () => (await sql(started, 'replica', `SELECT count(*) FROM bikes WHERE id = '${id}'`)) === '1',
    );
  });

  it('a replica stopped while writes go on catches up when it starts again', async () => {
    await started.stack.compose(['stop', 'replica']);
    const api = await apiClient(started.baseUrl);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await api.create(bike(`Checkpoint ${randomUUID().slice(0, 8)}`));
      expect(created.status).toBe(200); // the service goes on without it
      ids.push(((await created.json()) as { id: string }).id);
    }
    await started.stack.compose(['start', 'replica']);
    const list = ids.map((id) => `'${id}'`).join(', ');
    await eventually(
      'the writes made while it was away',
      async () => (await sql(started, 'replica', `SELECT count(*) FROM bikes WHERE id IN (${list})`)) === '3',
    );
    await started.stack.waitHealthy();
  });

  it('nginx finds instances added by --scale api=3 without a restart', async () => {
    await started.stack.up(['--scale', 'api=3']);
    const containers = await started.stack.waitHealthy();
    expect(containers.filter((c) => c.service === 'api' && c.health === 'healthy')).toHaveLength(3);
    // nginx looks the name up again every 5 seconds (or later, on a busy machine).
    await eventually(
      'nginx to send reads to all three',
      async () => (await instancesAnswering(started, 30)).length === 3,
    );
  });

  it('answers ps, logs and down with no variable set, and down -v leaves nothing behind', async () => {
    // podman's DNS (aardvark-dns 1.4) stops answering for a while after containers join or leave
    // the network, and nginx's health check, which goes through to the api, fails meanwhile.
    await started.stack.waitHealthy();
    const ps = await started.stack.compose(['ps']);
    for (const service of ['db', 'replica', 'pgbouncer', 'api', 'lb']) {
      expect(ps).toMatch(new RegExp(`_${service}_1 .*Up .*\\(healthy\\)`));
    }
    expect(await started.stack.compose(['logs', '--no-color', 'replica'])).toContain('started streaming WAL');
    await started.stack.compose(['down', '-v']);
    expect(await started.stack.leftovers()).toEqual([]);
  });
});
