import fs from 'node:fs';
import path from 'node:path';

/**
 * How root touches files near a cluster that another user (the server user) owns: never through
 * a path that user could change. Root writes only in directories no one else can write to, opens
 * with O_NOFOLLOW, and reads the server's own files without trusting them beyond a number.
 */

/** How many links one path may go through, as on Linux (MAXSYMLINKS): more is a loop. */
const MAX_LINKS = 40;

/** Why others could change this directory (or replace the entry `last` names in it); undefined when they cannot. */
function othersMayChange(dir: string, stat: fs.Stats, uid: number, last: boolean): string | undefined {
  if (stat.uid !== 0 && stat.uid !== uid) return `${dir} belongs to user ${stat.uid}`;
  const othersMayWrite = (stat.gid !== 0 && stat.mode & 0o020) || stat.mode & 0o002;
  // In a sticky directory (/tmp) others may add entries but not rename or remove ours.
  const sticky = (stat.mode & 0o1000) !== 0 && !last;
  return othersMayWrite && !sticky ? `others may write to ${dir}` : undefined;
}

/**
 * Why `dir` is not safe for root to work in, in one line; undefined when it is. The path is
 * walked as given, component by component, as the kernel resolves it: every directory on the way
 * and every link met is checked, then the link's target the same way. A link another user owns
 * could be pointed anywhere, at any time. The walk stops at the first component that does not
 * exist: the rest is made by us, in a directory no one else can change.
 */
function unsafeBecause(dir: string, uid: number): string | undefined {
  const absolute = path.isAbsolute(dir) ? dir : `${process.cwd()}${path.sep}${dir}`;
  const pending = absolute.split(path.sep).filter(Boolean);
  let current: string = path.sep;
  let links = 0;
  const root = othersMayChange(current, fs.lstatSync(current), uid, pending.length === 0);
  if (root) return root;
  for (let name = pending.shift(); name !== undefined; name = pending.shift()) {
    if (name === '.') continue;
    if (name === '..') {
      current = path.dirname(current); // `current` holds no link: its parent is the real one, checked
      continue;
    }
    const next = path.join(current, name);
    const stat = fs.lstatSync(next, { throwIfNoEntry: false });
    if (!stat) return undefined;
    if (stat.isSymbolicLink()) {
      // Its directory was checked as one on the way: only a sticky one is open to others, and in
      // it a link of ours cannot be replaced.
      if (stat.uid !== 0 && stat.uid !== uid) return `the link ${next} belongs to user ${stat.uid}`;
      if (++links > MAX_LINKS) return `${dir} goes through more than ${MAX_LINKS} links`;
      const target = fs.readlinkSync(next);
      pending.unshift(...target.split(path.sep).filter(Boolean));
      if (path.isAbsolute(target)) current = path.sep;
      continue;
    }
    const reason = othersMayChange(next, stat, uid, pending.length === 0);
    if (reason) return reason;
    current = next;
  }
  return undefined;
}

/**
 * Throws unless only root (or we) can change `dir`, every directory above it and every link on
 * the way to it, so nothing in it can be swapped for a link by someone else while we work there
 * (docs/running-as-root.md#a-data_dir-reached-through-links). Where `dir` does not exist yet, what
 * exists of its path is checked.
 */
export function assertOnlyUsCanChange(dir: string, what: string): void {
  const reason = unsafeBecause(dir, process.getuid?.() ?? 0);
  if (reason) {
    throw new Error(`${what} ${dir} is not safe to use as root: ${reason}; choose a directory only root can change`);
  }
}

/** The log the server writes to: created 0600 without following a link, handed over as an open fd. */
export function openPrivateLog(file: string): number {
  const fd = fs.openSync(
    file,
    fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_APPEND | fs.constants.O_NOFOLLOW,
    0o600,
  );
  try {
    if (!fs.fstatSync(fd).isFile()) throw new Error(`${file} is not a regular file`);
    // A log left by an older version may be another user's or readable by all: make it ours.
    fs.fchownSync(fd, process.getuid?.() ?? 0, process.getgid?.() ?? 0);
    fs.fchmodSync(fd, 0o600);
    return fd;
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
}

/**
 * A small file the server user owns, read without following a link or blocking on a fifo.
 * Undefined when it is missing or not a regular file. Its content is the server user's word.
 */
export function readServerFile(file: string): string | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    if (!fs.fstatSync(fd).isFile()) return undefined;
    const buffer = Buffer.alloc(64 * 1024);
    return buffer.subarray(0, fs.readSync(fd, buffer)).toString('utf8');
  } finally {
    fs.closeSync(fd);
  }
}
