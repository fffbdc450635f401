import { parseArgs } from 'node:util';
import { readSecret } from '../auth/secret';
import { ConfigError, readConfig } from '../config';
import { prepareToServe } from '../db/migrate';
import { connectPool, queryOn } from '../db/pool';
import { cursors } from '../http/cursors';
import { createLogger } from '../logger';
import { openDatabaseServer } from '../postgres/database-server';
import { EVENT_TYPES, type EventType, isEventType } from '../webhooks/events';
import { durationMs } from '../webhooks/retry';
import { checkUrl } from '../webhooks/send';
import { subscriptions } from '../webhooks/subscriptions';

const USAGE = `usage: npm run -s webhooks -- <command>
  add <url> [--events ${EVENT_TYPES.join(',')}]   a subscription from now on; prints it with its secret
  list                                                  every subscription, its state and why
  remove <id>
  rotate-secret <id> [--keep <duration, 24h>]           a new secret; the old one signs beside it for --keep
  deliveries <id> [--limit <n, 20>]                     the latest attempts, latest first
  replay <id> [--from <feed cursor | ISO time>]         active again, from the first change not delivered, or from --from`;

/** A mistake in the command line: said with the usage, exit status 2. */
class UsageError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function idOf(positionals: string[]): string {
  const id = positionals[1];
  if (id === undefined || !UUID.test(id))
    throw new UsageError(`a subscription id (a UUID) is required, got "${id ?? ''}"`);
  return id;
}

function eventsOf(text: string | undefined): EventType[] {
  if (text === undefined) return [...EVENT_TYPES];
  const events = text.split(',').map((event) => event.trim());
  const unknown = events.filter((event) => !isEventType(event));
  if (unknown.length > 0 || events.length === 0) {
    throw new UsageError(`--events takes ${EVENT_TYPES.join(', ')}, got "${unknown.join(',') || text}"`);
  }
  return [...new Set(events as EventType[])];
}

const digits = (value: unknown): value is string => typeof value === 'string' && /^-?\d{1,19}$/.test(value);
const isPair = (value: unknown): value is [string, string] =>
  Array.isArray(value) && value.length === 2 && digits(value[0]) && digits(value[1]);

/** The position and horizon a feed cursor holds (src/feed/following.ts seals them), opened with the service's secret. */
function cursorPosition(text: string, secret: string) {
  const payload = cursors(secret).open(text) as { k?: unknown; p?: unknown; h?: unknown } | undefined;
  if (payload?.k !== 'feed' || !isPair(payload.p) || !isPair(payload.h)) return undefined;
  return { txid: payload.p[0], changeId: payload.p[1], horizon: { txid: payload.h[0], changeId: payload.h[1] } };
}

const line = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

/**
 * npm run webhooks -- <command>: the operator's webhook subscriptions (docs/webhooks.md#for-the-operator),
 * in the catalog's database, from the service's own settings (DATABASE_URL, or the embedded
 * database of DATA_DIR). Every running instance sees a change within seconds. Each answer is JSON,
 * one line per subscription or attempt; a secret is printed only by add and rotate-secret.
 */
async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    args: process.argv.slice(2),
    allowPositionals: true,
    options: {
      events: { type: 'string' },
      keep: { type: 'string' },
      limit: { type: 'string' },
      from: { type: 'string' },
    },
  });
  const command = positionals[0];
  const config = readConfig(process.env, { signsTokens: false });
  const run = async (work: (subs: ReturnType<typeof subscriptions>) => Promise<number>): Promise<number> => {
    const logger = createLogger('warn');
    const server = await openDatabaseServer(config, logger);
    try {
      await prepareToServe(server, config, (message) => logger.info(message));
      const pool = connectPool(server.url, (err) => logger.warn({ err: err.message }, 'database connection lost'), {
        ServerClient: server.ServerClient,
        preparedStatements: 'off',
      });
      try {
        return await work(subscriptions(queryOn(pool)));
      } finally {
        await pool.end();
      }
    } finally {
      await server.stop();
    }
  };
  const notFound = (id: string) => {
    console.error(`no subscription ${id}`);
    return 1;
  };

  switch (command) {
    case 'add': {
      const url = positionals[1];
      if (url === undefined) throw new UsageError('add needs the receiver URL');
      const wrong = checkUrl(url);
      if (wrong) throw new UsageError(`the URL ${wrong}`);
      const events = eventsOf(values.events);
      return run(async (subs) => {
        line(await subs.add(url, events));
        return 0;
      });
    }
    case 'list':
      return run(async (subs) => {
        for (const subscription of await subs.list()) line(subscription);
        return 0;
      });
    case 'remove': {
      const id = idOf(positionals);
      return run(async (subs) => {
        if (!(await subs.remove(id))) return notFound(id);
        line({ removed: id });
        return 0;
      });
    }
    case 'rotate-secret': {
      const id = idOf(positionals);
      const keep = durationMs(values.keep ?? '24h');
      if (keep === undefined) throw new UsageError(`--keep takes a duration such as 24h or 30m, got "${values.keep}"`);
      return run(async (subs) => {
        const rotated = await subs.rotateSecret(id, keep);
        if (!rotated) return notFound(id);
        line(rotated);
        return 0;
      });
    }
    case 'deliveries': {
      const id = idOf(positionals);
      const limit = Number(values.limit ?? '20');
      if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
        throw new UsageError(`--limit takes a whole number from 1 to 10000, got "${values.limit}"`);
      }
      return run(async (subs) => {
        for (const attempt of await subs.deliveries(id, limit)) line(attempt);
        return 0;
      });
    }
    case 'replay': {
      const id = idOf(positionals);
      const from = values.from;
      const time = from !== undefined && /^\d{4}-\d\d-\d\d/.test(from) ? new Date(from) : undefined;
      if (time !== undefined && Number.isNaN(time.getTime())) throw new UsageError(`--from: "${from}" is not a time`);
      let cursor: ReturnType<typeof cursorPosition>;
      if (from !== undefined && time === undefined) {
        cursor = cursorPosition(from, config.jwtSecret ?? readSecret(config.dataDir));
        if (!cursor)
          throw new UsageError('--from takes a cursor of GET /bikes/changes (or of a webhook) or an ISO time');
      }
      return run(async (subs) => {
        const position = time ? ((await subs.positionAt(time)) ?? (await subs.positionNow())) : cursor;
        if (!(await subs.replay(id, position))) return notFound(id);
        line({
          replaying: id,
          from: position ? { txid: position.txid, changeId: position.changeId } : 'where it stands',
        });
        return 0;
      });
    }
    default:
      throw new UsageError(command === undefined ? 'a command is required' : `unknown command "${command}"`);
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`${(err as Error).message}\n${USAGE}`);
      process.exit(2);
    }
    const message = err instanceof Error ? err.message : String(err);
    console.error(err instanceof ConfigError ? `bike catalog: ${message}` : `webhooks: ${message}`);
    process.exit(1);
  },
);
