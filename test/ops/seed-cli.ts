import { execFile } from 'node:child_process';
import path from 'node:path';
import { PATIENCE_MS } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');

export interface SeedRun {
  code: number;
  output: string;
}

/**
 * Runs the built seeding command (`node dist/cli/seed.js`, what `npm run db:seed` runs after
 * building) with only the database settings given here, in `root` (this project unless a test
 * made a copy elsewhere).
 */
export function runSeed(args: string[], env: Record<string, string>, root = ROOT): Promise<SeedRun> {
  const { DATABASE_URL: _url, JWT_SECRET: _secret, DATA_DIR: _dir, ...inherited } = process.env;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(root, 'dist', 'cli', 'seed.js'), ...args],
      { cwd: root, env: { ...inherited, LOG_LEVEL: 'info', ...env }, timeout: PATIENCE_MS },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, output: stdout + stderr });
      },
    );
  });
}
