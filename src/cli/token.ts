import { parseArgs } from 'node:util';
import { readSecret } from '../auth/secret';
import { ALL_SCOPES, parseScopes, type Scope } from '../auth/scopes';
import { MAX_TOKEN_LIFETIME_SECONDS, operatorToken } from '../auth/tokens';
import { ConfigError, readConfig } from '../config';

const USAGE =
  `usage: npm run -s token -- --username <name> [--ttl <seconds, 1 to ${MAX_TOKEN_LIFETIME_SECONDS}>] ` +
  `[--scopes <${ALL_SCOPES.join(',')}: all when absent>]`;

function readOptions(args: string[]): { username: string; ttl: number; scopes: Scope[] } {
  const { values } = parseArgs({
    args,
    options: { username: { type: 'string' }, ttl: { type: 'string' }, scopes: { type: 'string' } },
  });
  if (values.username === undefined || values.username === '') throw new Error('--username is required');
  const ttlText = values.ttl ?? String(MAX_TOKEN_LIFETIME_SECONDS);
  const ttl = Number(ttlText);
  if (!/^\d+$/.test(ttlText) || ttl < 1 || ttl > MAX_TOKEN_LIFETIME_SECONDS) {
    throw new Error(
      `--ttl must be a whole number of seconds from 1 to ${MAX_TOKEN_LIFETIME_SECONDS} (the longest a token ` +
        `the service accepts may live), got "${ttlText}"`,
    );
  }
  return {
    username: values.username,
    ttl,
    scopes: values.scopes === undefined ? ALL_SCOPES : parseScopes(values.scopes),
  };
}

/**
 * npm run token -- --username <name> [--ttl <seconds>] [--scopes <list>]: the operator's command for a token
 * (docs/reference/callers.md#who-may-write), which the service accepts whatever TOKEN_ISSUANCE says. It
 * signs with the service's own secret, from the same settings (JWT_SECRET, JWT_SECRET_FILE, or
 * the one the embedded database's DATA_DIR keeps), and prints the token alone on stdout; the
 * secret is never printed.
 */
function main(): void {
  let options: { username: string; ttl: number; scopes: Scope[] };
  try {
    options = readOptions(process.argv.slice(2));
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  try {
    const config = readConfig(process.env);
    const secret = config.jwtSecret ?? readSecret(config.dataDir);
    process.stdout.write(`${operatorToken(secret, options.username, options.ttl, options.scopes)}\n`);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    console.error(err instanceof ConfigError ? `bike catalog: ${message}` : `no token made: ${message}`);
    process.exit(1);
  }
}

main();
