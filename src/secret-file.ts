import { randomUUID } from 'node:crypto';
import fs from 'node:fs';

/**
 * A secret kept in a file readable by its owner only (0600), made once and reused after
 * restarts. It appears whole or not at all (written aside, then linked into place), so
 * processes starting at once all read the same one. One that others may read (copied or restored
 * without its mode) is made its owner's only again.
 */
export function loadOrCreateSecretFile(file: string, make: () => string): string {
  if (!fs.existsSync(file)) {
    const partial = `${file}.${randomUUID()}.partial`;
    fs.writeFileSync(partial, make(), { mode: 0o600, flag: 'wx' });
    try {
      fs.linkSync(partial, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      fs.unlinkSync(partial);
    }
  }
  const fd = fs.openSync(file, 'r');
  try {
    if (fs.fstatSync(fd).mode & 0o077) fs.fchmodSync(fd, 0o600);
    return fs.readFileSync(fd, 'utf8').trim();
  } finally {
    fs.closeSync(fd);
  }
}
