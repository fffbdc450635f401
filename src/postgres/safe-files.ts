import fs from 'node:fs';
import path from 'node:path';

/**
 * How root touches files near a cluster that another user (the server user) owns: never through
 * a path that user could change. Root writes only in directories no one else can write to, opens
 * with O_NOFOLLOW, and reads the server's own files without trusting them beyond a number.
 */

/** Why a directory is not safe for root to work in, in one line; undefined when it is. */
function unsafeBecause(dir: string, uid: number): string | undefined {
  const components = fs.realpathSync(dir).split(path.sep).filter(Boolean);
  let current: string = path.sep;
  for (let i = 0; i <= components.length; i++) {
    const stat = fs.lstatSync(current);
    const last = i === components.length;
    const othersMayWrite = (stat.gid !== 0 && stat.mode & 0o020) || stat.mode & 0o002;
    // In a sticky directory (/tmp) others may add entries but not rename or remove ours.
    const sticky = (stat.mode & 0o1000) !== 0 && !last;
    if (stat.uid !== 0 && stat.uid !== uid) return `${current} belongs to user ${stat.uid}`;
    if (othersMayWrite && !sticky) return `others may write to ${current}`;
    if (!last) current = path.join(current, components[i]);
  }
  return undefined;
}

/**
 * Throws unless only root (or we) can change `dir` and every directory above it, so nothing in
 * it can be swapped for a link by someone else while we work there.
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
