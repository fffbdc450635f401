import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Bike } from '../../src/bikes/bike';
import { createTestDatabase } from '../support/databases';
import { type ServiceProcess, spawnService } from '../support/process';
import { createLoad } from './support/load';
import { isAlive, postgresLog, postgresPidsFor } from './support/postgres';
import { waitFor } from '../support/wait';
import { tempDataDir } from '../support/temp-dir';

/**
 * The service process killed with SIGKILL under a steady load of creates, then started again:
 * every create it acknowledged with 200 is there, exactly as acknowledged, and every other row
 * is one of the creates still in flight when it died, whole. Run against the built service
 * (`node dist/server.js`, what `npm start` runs), with DATABASE_URL and with the embedded default.
 */

const LOAD_MS = 2_000;
const MIN_ACKNOWLEDGED = 100;

async function token(baseUrl: string): Promise<string> {
  const res = await fetch(`${baseUrl}/api/user`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"username":"crash"}',
  });
  return ((await res.json()) as { token: string }).token;
}

async function allBikes(baseUrl: string): Promise<Bike[]> {
  const res = await fetch(`${baseUrl}/bikes/all`);
  expect(res.status).toBe(200);
  return (await res.json()) as Bike[];
}

/** Loads the service with creates, kills it mid-way, and returns what was acknowledged and what was in flight. */
async function killUnderLoad(service: ServiceProcess) {
  const load = createLoad(service.baseUrl, await token(service.baseUrl));
  // A steady load: at least LOAD_MS of it, and at least MIN_ACKNOWLEDGED creates, however busy the machine.
  const started = Date.now();
  await waitFor('the load to get going', () =>
    Date.now() - started >= LOAD_MS && load.acknowledged.length >= MIN_ACKNOWLEDGED ? true : undefined,
  );
  const acknowledgedBeforeKill = load.acknowledged.length;
  service.child.kill('SIGKILL');
  const exit = await service.exited;
  await load.finished;
  expect(exit.signal).toBe('SIGKILL');
  expect(acknowledgedBeforeKill).toBeGreaterThanOrEqual(MIN_ACKNOWLEDGED);
  return load;
}

/** Every acknowledged create reads back as acknowledged; any other row is a whole in-flight create. */
async function expectNothingLost(
  baseUrl: string,
  acknowledged: Bike[],
  unanswered: Array<{ title: string }>,
): Promise<number> {
  for (const bike of acknowledged) {
    const res = await fetch(`${baseUrl}/bikes/${bike.id}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(bike);
  }
  const stored = await allBikes(baseUrl);
  const acknowledgedIds = new Set(acknowledged.map((b) => b.id));
  const extra = stored.filter((bike) => !acknowledgedIds.has(bike.id));
  expect(stored.length).toBe(acknowledged.length + extra.length);
  expect(extra.length).toBeLessThanOrEqual(unanswered.length);
  const inFlightTitles = new Set(unanswered.map((f) => f.title));
  for (const bike of extra) expect(inFlightTitles.has(bike.title)).toBe(true);
  return extra.length;
}

describe('the service process, killed with SIGKILL under a load of creates', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  function track(service: ServiceProcess): ServiceProcess {
    cleanups.push(async () => {
      if (service.child.exitCode === null && service.child.signalCode === null) {
        service.child.kill('SIGTERM');
        await service.exited;
      }
    });
    return service;
  }

  it('with DATABASE_URL: after a restart every acknowledged create is present and intact', async () => {
    const env = { DATABASE_URL: await createTestDatabase(), JWT_SECRET: randomBytes(32).toString('base64url') };
    const first = track(await spawnService(env));
    const load = await killUnderLoad(first);

    const second = track(await spawnService(env));
    const landed = await expectNothingLost(second.baseUrl, load.acknowledged, load.unanswered);
    console.log(
      `crash (DATABASE_URL): ${load.acknowledged.length} creates acknowledged before SIGKILL, all present and intact after restart; ${load.unanswered.length} in flight, ${landed} of them stored whole`,
    );
  });

  it('with the embedded PostgreSQL: the restarted service adopts the orphaned server, loses nothing, and stops it cleanly', async () => {
    const dataDir = tempDataDir('crash');
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    // If the test fails half-way, no PostgreSQL may outlive it.
    cleanups.push(() => postgresPidsFor(dataDir).forEach((pid) => isAlive(pid) && process.kill(pid, 'SIGQUIT')));
    const env = { DATA_DIR: dataDir };
    const first = track(await spawnService(env));
    const tokenBeforeCrash = await token(first.baseUrl);
    const load = await killUnderLoad(first);

    // The killed service could not stop its PostgreSQL: it is still running, orphaned.
    const [orphan, , , port] = fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n');
    expect(isAlive(Number(orphan))).toBe(true);

    const second = track(await spawnService(env));
    expect(second.output()).toContain(
      `adopting the PostgreSQL server already running on this data directory (port ${port})`,
    );
    const landed = await expectNothingLost(second.baseUrl, load.acknowledged, load.unanswered);
    // The signing secret lives in DATA_DIR: a token from before the crash still works.
    const patch = await fetch(`${second.baseUrl}/bikes/${load.acknowledged[0].id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${tokenBeforeCrash}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(patch.status).toBe(200);

    // The next shutdown stops the adopted server cleanly.
    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    await waitFor('the adopted PostgreSQL to exit', () => (isAlive(Number(orphan)) ? undefined : true));
    expect(postgresPidsFor(dataDir)).toEqual([]);
    expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    expect(postgresLog(dataDir).trimEnd()).toMatch(/database system is shut down$/);
    console.log(
      `crash (embedded): ${load.acknowledged.length} creates acknowledged before SIGKILL, all present and intact after restart (${load.unanswered.length} in flight, ${landed} stored whole); orphan pid ${orphan} adopted and stopped cleanly`,
    );
  });
});
