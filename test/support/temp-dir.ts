import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A fresh temporary directory, for an embedded PostgreSQL or a service's DATA_DIR. When the tests
 * run as root, PostgreSQL runs as the postgres user and must traverse it: mkdtemp makes it 0700,
 * and in a directory it cannot reach the cluster would be kept in /var/lib/bike-catalog instead.
 */
export function tempDataDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `bike-catalog-${prefix}-`));
  fs.chmodSync(dir, 0o711);
  return dir;
}
