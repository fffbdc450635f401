import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { hashOfKey, newApiKey, parseDuration } from '../auth/api-keys';
import { parseScopes } from '../auth/scopes';
import { ConfigError, readConfig } from '../config';
import { apiKeys } from '../db/api-keys';
import { prepareToServe } from '../db/migrate';
import { connectPool, writeOn } from '../db/pool';
import { createLogger } from '../logger';
import { openDatabaseServer } from '../postgres/database-server';

const USAGE = `usage:
  npm run -s keys -- add --name <label> --scopes <scope,...> [--expires <90d, 12w, 1y, ...>]
  npm run -s keys -- list
  npm run -s keys -- revoke <label or id>`;

class UsageError extends Error {}

type Command =
  | { name: 'add'; label: string; scopes: string[]; lifetimeSeconds: number | null }
  | { name: 'list' }
  | { name: 'revoke'; which: string };

function commandOf(args: string[]): Command {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { name: { type: 'string' }, scopes: { type: 'string' }, expires: { type: 'string' } },
  });
  const [name, ...rest] = positionals;
  try {
    if (name === 'add' && rest.length === 0) {
      if (!values.name?.trim()) throw new UsageError('--name is required: a label for the key, unique');
      if (values.scopes === undefined) throw new UsageError('--scopes is required');
      return {
        name,
        label: values.name.trim(),
        scopes: parseScopes(values.scopes),
        lifetimeSeconds: values.expires === undefined ? null : parseDuration(values.expires),
      };
    }
    if (name === 'list' && rest.length === 0) return { name };
    if (name === 'revoke' && rest.length === 1) return { name, which: rest[0] };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  throw new UsageError(name === undefined ? 'name a command' : `"${positionals.join(' ')}" is not a command`);
}

const when = (date: Date | null, none: string) => (date === null ? none : date.toISOString());

/**
 * npm run keys: the operator's API keys (docs/reference/callers.md#api-keys). `add` prints the new key
 * once, alone on stdout (the store keeps only its SHA-256); `list` shows every key but never
 * one; `revoke` stops a key, and every token traded for it, on every instance at once.
 */
async function main(): Promise<void> {
  let command: Command;
  try {
    command = commandOf(process.argv.slice(2));
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  const config = readConfig(process.env, { signsTokens: false });
  // Its own output is what it prints; the database's start and stop are said only when they fail.
  const logger = createLogger(process.env.LOG_LEVEL === undefined ? 'warn' : config.logLevel);
  const server = await openDatabaseServer(config, logger);
  try {
    await prepareToServe(server, config, (message) => logger.debug(message));
    const pool = connectPool(server.url, (err) => logger.warn({ err: err.message }, 'database connection lost'), {
      ServerClient: server.ServerClient,
    });
    try {
      const keys = apiKeys(writeOn(pool));
      if (command.name === 'add') {
        const key = newApiKey();
        const added = await keys.add({
          id: randomUUID(),
          label: command.label,
          keyHash: hashOfKey(key),
          scopes: command.scopes,
          lifetimeSeconds: command.lifetimeSeconds,
        });
        if (!added) throw new Error(`a key labelled "${command.label}" exists (revoked or not): choose another label`);
        console.error(
          `key "${added.label}" (${added.id}) with ${added.scopes.join(', ')}, ` +
            `${added.expiresAt ? `until ${added.expiresAt.toISOString()}` : 'no expiry'}; it is shown only now:`,
        );
        process.stdout.write(`${key}\n`);
      } else if (command.name === 'list') {
        const rows = (await keys.list()).map((key) => ({
          label: key.label,
          id: key.id,
          scopes: key.scopes.join(','),
          created: key.createdAt.toISOString(),
          'last used': when(key.lastUsedAt, 'never'),
          expires: when(key.expiresAt, 'never'),
          revoked: when(key.revokedAt, '-'),
        }));
        process.stdout.write(rows.length === 0 ? 'no keys\n' : `${JSON.stringify(rows, null, 2)}\n`);
      } else {
        const revoked = await keys.revoke(command.which);
        if (!revoked) throw new Error(`no key has the label or id "${command.which}"`);
        process.stdout.write(`revoked "${revoked.label}" (${revoked.id}) at ${when(revoked.revokedAt, '-')}\n`);
      }
    } finally {
      await pool.end();
    }
  } finally {
    await server.stop();
  }
}

main().catch((err) => {
  const message = err instanceof Error ? err.message : String(err);
  console.error(err instanceof ConfigError ? `bike catalog: ${message}` : `keys: ${message}`);
  process.exit(1);
});
