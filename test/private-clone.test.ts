import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLUSTERS_DIR } from '../src/postgres/shared-dir';
import { client, newBike } from './support/bikes';
import { spawnService } from './support/process';

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
    const first = await spawnService({}, { root: clone, timeoutMs: 60_000 });
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

    const second = await spawnService({}, { root: clone, timeoutMs: 60_000 });
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
  }, 120_000);

  it('once the clone is deleted, `npm run db:prune-clusters` removes its cluster and keeps the others', () => {
    const clusterHome = path.dirname(cluster);
    fs.rmSync(clone, { recursive: true, force: true });
    const output = execFileSync(process.execPath, [path.join(ROOT, 'dist', 'cli', 'prune-clusters.js')]).toString();
    expect(output).toContain(`removed ${clusterHome}: ${path.join(clone, '.data')} no longer uses it`);
    expect(fs.existsSync(clusterHome)).toBe(false);
  }, 60_000);
});
