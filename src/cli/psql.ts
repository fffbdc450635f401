import { spawn } from 'node:child_process';
import { readConfig } from '../config';
import { openDatabaseServer } from '../postgres/database-server';
import { createLogger } from '../logger';
import { acceptedAuth } from '../pg-require-auth';

/**
 * npm run db:psql [-- psql arguments]: psql on the catalog database, for reporting queries.
 * With the embedded database it finds the running server (or starts one for the session);
 * the password goes to psql through the environment, never onto the command line.
 */
async function main(): Promise<number> {
  const config = readConfig(process.env, { signsTokens: false });
  const server = await openDatabaseServer(config, createLogger('warn'));
  try {
    const url = new URL(server.directUrl);
    const password = decodeURIComponent(url.password);
    url.password = '';
    // psql accepts what the service does (the embedded server is made for SCRAM only): libpq 16 and
    // later refuse to give the password any other way; older ones ignore the variable
    // (docs/configuration.md#how-the-service-authenticates-to-postgresql).
    const accepted = acceptedAuth(server.directUrl, url.hostname, password !== '');
    const requireAuth = accepted ? { PGREQUIREAUTH: [...accepted].join(',') } : {};
    const child = spawn('psql', [url.toString(), ...process.argv.slice(2)], {
      stdio: 'inherit',
      env: { ...process.env, PGPASSWORD: password, ...requireAuth },
    });
    return await new Promise<number>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code) => resolve(code ?? 1));
    });
  } finally {
    await server.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    console.error(
      missing
        ? 'psql is not installed (Debian/Ubuntu: apt-get install postgresql-client)'
        : `db:psql failed: ${(err as Error).message}`,
    );
    process.exit(1);
  },
);
