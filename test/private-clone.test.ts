import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLUSTERS_DIR } from '../src/postgres/shared-dir';
import { client, newBike } from './support/bikes';
import { spawnService, type ServiceProcess } from './support/process';
import { waitFor } from './support/wait';

const ROOT = path.join(__dirname, '..');
const asRoot = process.getuid?.() === 0;
if (!asRoot) {
  console.log(
    'private-clone.test.ts skipped: only root runs PostgreSQL as another user, who may not reach a private clone',
  );
}

/** A copy of the built project (dist/, prisma/, node_modules/) in `dir`, as `git clone` + `npm install` would leave it. */
function copyProject(dir: string): void {
  for (const entry of ['package.json', 'dist', 'prisma']) {
    fs.cpSync(path.join(ROOT, entry), path.join(dir, entry), { recursive: true });
  }
  try {
    // Hard links: a second node_modules in a moment, with the files' own modes.
    execFileSync('cp', ['-al', path.join(ROOT, 'node_modules'), dir]);
  } catch {
    execFileSync('cp', ['-a', path.join(ROOT, 'node_modules'), dir]); // another file system
  }
}

/**
 * As a user who clones into /root or a `mktemp -d` directory: as root, the embedded PostgreSQL
 * runs as the postgres user, which cannot enter the clone, so neither its binaries in
 * node_modules nor the default DATA_DIR (.data in the clone) are where that user can reach them.
 */
(asRoot ? describe : describe.skip)('the service cloned into a private (0700) directory, run as root', () => {
  let home: string;
  let clone: string;
  let cluster: string;
  beforeAll(() => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'bike-catalog-private-'));
    clone = path.join(home, 'bikes');
    fs.mkdirSync(clone);
    copyProject(clone);
  });
  afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

  it('serves on its embedded PostgreSQL, and keeps its bikes and its tokens across a restart', async () => {
    const first = await spawnService({}, { root: clone });
    const tokenRes = await fetch(`${first.baseUrl}/api/user`, { method: 'POST' });
    const { token } = (await tokenRes.json()) as { token: string };
    const created = await client(first.baseUrl, token).create(newBike());
    first.child.kill('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });

    // Nothing of the user's was loosened: the cluster lives where the server user can reach
    // it, linked from .data; the secrets stay in .data, readable by root only.
    expect(fs.statSync(home).mode & 0o777).toBe(0o700);
    const link = path.join(clone, '.data', 'postgres');
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    cluster = fs.readlinkSync(link);
    expect(path.dirname(path.dirname(cluster))).toBe(CLUSTERS_DIR);
    const serverUid = Number(execFileSync('id', ['-u', 'bike-catalog']).toString());
    expect(fs.statSync(cluster).uid).toBe(serverUid);
    expect(fs.statSync(cluster).mode & 0o777).toBe(0o700);
    for (const secret of ['jwt-secret', 'postgres-password', 'postgres-app-password']) {
      expect(fs.statSync(path.join(clone, '.data', secret))).toMatchObject({ uid: 0 });
      expect(fs.statSync(path.join(clone, '.data', secret)).mode & 0o777).toBe(0o600);
    }

    const second = await spawnService({}, { root: clone });
    try {
      const api = client(second.baseUrl, token);
      const read = await api.request('GET', `/bikes/${created.id}`);
      expect(read.status).toBe(200);
      expect(await read.json()).toEqual(created);
      // The token issued before the restart still verifies: the secret was kept.
      expect((await api.request('DELETE', `/bikes/${created.id}`)).status).toBe(200);
    } finally {
      second.child.kill('SIGTERM');
      expect((await second.exited).code).toBe(0);
    }
  });

  it('once the clone is deleted, `npm run db:prune-clusters` removes its cluster and keeps the others', () => {
    const clusterHome = path.dirname(cluster);
    fs.rmSync(clone, { recursive: true, force: true });
    expectPruned(
      clusterHome,
      `no clone holds its lease, and ${path.join(clone, '.data')}, where it was last started from, no longer links to it`,
    );
  });
});

const PRUNE = path.join(__dirname, '..', 'dist', 'cli', 'prune-clusters.js');
/** A private (0700) directory, as /root or `mktemp -d` is, under `parent`. */
function privateDir(parent = os.tmpdir()): string {
  return fs.mkdtempSync(path.join(parent, 'bike-catalog-prune-'));
}

/** The cluster home in CLUSTERS_DIR that `dataDir` links to. */
function clusterHomeOf(dataDir: string): string {
  return path.dirname(fs.readlinkSync(path.join(dataDir, 'postgres')));
}

/** What prune said about `home`: its one line. */
function pruneSaysOf(home: string): string[] {
  const output = execFileSync(process.execPath, [PRUNE]).toString();
  return output.split('\n').filter((line) => line.includes(`${home}:`));
}

/**
 * Prunes, and expects `home` gone: removed for `reason` by this prune, or, the clusters being the
 * machine's, by a prune of another test run on it first.
 */
function expectPruned(home: string, reason: string): void {
  const said = pruneSaysOf(home);
  if (said.length > 0) expect(said).toEqual([`removed ${home}: ${reason}`]);
  expect(fs.existsSync(home)).toBe(false);
}

async function stop(service: ServiceProcess): Promise<void> {
  service.child.kill('SIGTERM');
  expect((await service.exited).code).toBe(0);
}

/**
 * npm run db:prune-clusters removes only the clusters it can prove unused
 * (docs/running-as-root.md#which-clusters-prune-removes). In this file only, so that no other test's
 * prune removes a cluster one of these tests has just made removable. Other clusters in
 * CLUSTERS_DIR (other clones on this machine) are left to their own lines.
 */
(asRoot ? describe : describe.skip)('npm run db:prune-clusters', () => {
  const made: string[] = [];
  const homes: string[] = [];
  afterEach(() => {
    // What a test left: its clone, and its cluster when prune rightly kept it.
    for (const dir of [...made, ...homes]) fs.rmSync(dir, { recursive: true, force: true });
    made.length = 0;
    homes.length = 0;
  });

  /** A clone's DATA_DIR in a private directory, used once by the service; its cluster's home. */
  async function usedClone(parent?: string): Promise<{ dataDir: string; home: string; output: string }> {
    const dir = privateDir(parent);
    made.push(dir);
    const dataDir = path.join(dir, 'clone', '.data');
    const service = await spawnService({ DATA_DIR: dataDir });
    await stop(service);
    const home = clusterHomeOf(dataDir);
    homes.push(home);
    return { dataDir, home, output: service.output() };
  }

  it('keeps the cluster of a clone renamed after use, which then starts with its catalog', async () => {
    const dir = privateDir();
    made.push(dir);
    const before = path.join(dir, 'clone');
    const first = await spawnService({ DATA_DIR: path.join(before, '.data') });
    const { token } = (await (await fetch(`${first.baseUrl}/api/user`, { method: 'POST' })).json()) as {
      token: string;
    };
    const bike = await client(first.baseUrl, token).create(newBike());
    await stop(first);
    const home = clusterHomeOf(path.join(before, '.data'));
    homes.push(home);

    const after = path.join(dir, 'renamed');
    fs.renameSync(before, after);
    expect(pruneSaysOf(home)).toEqual([
      `kept ${home}: in use, a clone holds its lease (last started from ${before}/.data, since renamed or moved)`,
    ]);

    const second = await spawnService({ DATA_DIR: path.join(after, '.data') });
    try {
      const read = await fetch(`${second.baseUrl}/bikes/${bike.id}`);
      expect(read.status).toBe(200);
      expect(await read.json()).toEqual(bike);
    } finally {
      await stop(second);
    }
    // The start recorded where the clone is now.
    expect(pruneSaysOf(home)).toEqual([
      `kept ${home}: in use, a clone holds its lease (last started from ${after}/.data)`,
    ]);
  });

  it('keeps the cluster of a deleted clone while a server still runs on it, and removes it once that server is stopped', async () => {
    const dir = privateDir();
    made.push(dir);
    const dataDir = path.join(dir, 'clone', '.data');
    const service = await spawnService({ DATA_DIR: dataDir });
    // Killed as by the OOM killer: its PostgreSQL, a process of its own, runs on.
    service.child.kill('SIGKILL');
    await service.exited;
    const home = clusterHomeOf(dataDir);
    homes.push(home);
    const pid = Number(fs.readFileSync(path.join(home, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    fs.rmSync(path.dirname(dataDir), { recursive: true });
    expect(pruneSaysOf(home)).toEqual([
      `kept ${home}: no clone holds its lease, but a server still runs on it (process ${pid}); stop it (kill -INT ${pid}) and prune again`,
    ]);

    process.kill(pid, 'SIGINT');
    await waitFor('the server to stop', () =>
      fs.existsSync(path.join(home, 'data', 'postmaster.pid')) ? undefined : true,
    );
    expectPruned(
      home,
      `no clone holds its lease, and ${dataDir}, where it was last started from, no longer links to it`,
    );
  });

  it('keeps the cluster of a clone whose lease file was deleted while the clone still links to it', async () => {
    const { dataDir, home } = await usedClone();
    fs.unlinkSync(path.join(dataDir, 'postgres.lease'));
    expect(pruneSaysOf(home)).toEqual([
      `kept ${home}: ${dataDir} still links to it, though it no longer holds its lease (a start renews it)`,
    ]);
  });

  /** The device of the file system `dir` would be made on: its nearest ancestor that exists (on a fresh machine, none of it). */
  const deviceOf = (dir: string): number => (fs.existsSync(dir) ? fs.statSync(dir).dev : deviceOf(path.dirname(dir)));
  const otherFileSystem = asRoot && deviceOf('/dev/shm') !== deviceOf(path.dirname(CLUSTERS_DIR));
  (otherFileSystem ? it : it.skip)(
    'keeps the cluster of a clone on another file system, even once it is gone, and says how to remove it by hand',
    async () => {
      const { dataDir, home, output } = await usedClone('/dev/shm');
      expect(output).toContain(
        `${dataDir} is on another file system than ${path.dirname(CLUSTERS_DIR)}: npm run db:prune-clusters cannot tell whether it still uses ${home}, and will keep it`,
      );
      fs.rmSync(path.dirname(dataDir), { recursive: true });
      expect(pruneSaysOf(home)).toEqual([
        `kept ${home}: ${dataDir} is on another file system, so no lease can prove whether it still uses it; once that clone is gone, remove it by hand: rm -r ${home}`,
      ]);
      expect(fs.existsSync(path.join(home, 'data', 'PG_VERSION'))).toBe(true);
    },
  );

  it('keeps a cluster made by an older version (no lease), and says how to remove it by hand', async () => {
    const { dataDir, home } = await usedClone();
    // What an older version left: the cluster and its data-dir mark, no lease.
    fs.unlinkSync(path.join(home, 'lease'));
    fs.unlinkSync(path.join(dataDir, 'postgres.lease'));
    expect(pruneSaysOf(home)).toEqual([
      `kept ${home}: it has no lease (made by an older version, or by a first start that did not finish); ` +
        `start ${dataDir} once to give it one, or, if that clone is gone, remove it by hand: rm -r ${home}`,
    ]);
    expect(fs.existsSync(path.join(home, 'data', 'PG_VERSION'))).toBe(true);
  });

  it('keeps a directory it did not make and mark, and touches nothing in it', () => {
    const home = fs.mkdtempSync(path.join(CLUSTERS_DIR, 'not-ours-'));
    homes.push(home);
    fs.writeFileSync(path.join(home, 'precious'), 'keep me');
    expect(pruneSaysOf(home)).toEqual([
      `kept ${home}: not made by this version of the service (no owner mark); remove it by hand if unused`,
    ]);
    expect(fs.readFileSync(path.join(home, 'precious'), 'utf8')).toBe('keep me');
  });
});
