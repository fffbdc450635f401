import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { OPERATOR_ISSUER } from './auth/caller';
import type { KeySetSource } from './auth/key-set';
import type { IdentityProvider } from './auth/provider';
import { ALL_SCOPES, isScope, type Scope } from './auth/scopes';
import { MIN_SECRET_BYTES, MIN_SECRET_DISTINCT_CHARACTERS } from './auth/secret';
import type { TokenIssuance } from './auth/tokens';
import type { PreparedStatements } from './db/pool';
import { requireAuthOf } from './pg-require-auth';
import { DEFAULT_RETRY_DELAYS, retryDelaysOf } from './webhooks/retry';

/** Everything the service reads from its environment, validated once at start-up. */
export interface Config {
  port: number;
  /** Unset: the service runs its own embedded PostgreSQL in `dataDir`. */
  databaseUrl: string | undefined;
  /**
   * Where migrations run, when not through DATABASE_URL: typically PostgreSQL itself as a role
   * that may change the schema. Optional: migrations are safe through a transaction pooler such
   * as PgBouncer (their lock is transaction-level); unset, DATABASE_URL serves.
   */
  directUrl: string | undefined;
  /** A streaming replica for the read routes; unset, reads go to DATABASE_URL. */
  replicaUrl: string | undefined;
  /** DATABASE_PREPARED_STATEMENTS: auto (the default), on or off (PreparedStatements in src/db/pool.ts). */
  preparedStatements: PreparedStatements;
  dataDir: string;
  /** JWT_SECRET, or the file JWT_SECRET_FILE names. Unset: with the embedded database a secret is created once in `dataDir`. */
  jwtSecret: string | undefined;
  /** TOKEN_ISSUANCE: `open`, POST /api/user gives anyone a token (the specification), or `closed` (docs/reference/callers.md#who-may-write). */
  tokenIssuance: TokenIssuance;
  /** JWT_JWKS_URL or JWT_JWKS_FILE, JWT_ISSUER, JWT_AUDIENCE: the identity provider whose tokens are accepted too; unset, none. */
  identityProvider: IdentityProvider | undefined;
  /** METRICS_PORT: /metrics is served there, on its own listener, and not on `port`. Unset: on `port`. */
  metricsPort: number | undefined;
  /**
   * METRICS_HOST: the address METRICS_PORT's listener binds; 127.0.0.1 unless set, so that the
   * admin port is reachable from this machine only (docs/reference/metrics-and-logs.md#metrics-on-the-loopback-interface).
   */
  metricsHost: string;
  /** Origin allowed to call the API from a browser; CORS is off when unset. */
  corsOrigin: string | undefined;
  logLevel: string;
  /** Abuse limits per client (docs/reference/callers.md#abuse-limits). */
  limits: Limits;
  /**
   * TRUST_PROXY: how many proxies of ours stand in front (0: none, the peer is the client). The
   * client is the address the outermost of them appended to X-Forwarded-For, never an entry the
   * client wrote itself (docs/reference/callers.md#trusted-proxies).
   */
  trustedProxies: number;
  /** CHANGES_RETENTION_DAYS: how long the change log keeps a change (docs/reference/browse-and-sync.md#the-change-feed). */
  changesRetentionDays: number;
  /**
   * HISTORY_RETENTION_DAYS: how long the log keeps the history the feed's retention has passed
   * (superseded changes, deletes); null, for ever (docs/reference/browse-and-sync.md#the-change-feed).
   */
  historyRetentionDays: number | null;
  /**
   * MAX_EVENT_STREAMS: event streams this instance keeps open at once, every client's together
   * (docs/reference/browse-and-sync.md#bounds-on-event-streams).
   */
  maxEventStreams: number;
  /**
   * WEBHOOK_RETRY_DELAYS: the waits before each attempt after the first failed one, in
   * milliseconds; after the last the subscription is disabled (docs/webhooks.md#retries).
   */
  webhookRetryDelays: number[];
  /**
   * READ_CACHE_ENTRIES: bikes the read cache keeps in memory, by id and by handle together; 0, no
   * cache (docs/reference/database.md#the-read-cache).
   */
  readCacheEntries: number;
}

interface Limits {
  /** RATE_LIMIT_TOKENS: tokens a client may get per minute, over all instances. */
  tokensPerMinute: number;
  /** RATE_LIMIT_WRITES: creates, replaces, updates and deletes per client per minute, over all instances. */
  writesPerMinute: number;
  /** MAX_LIST_STREAMS: /bikes/all and search answers one client may be receiving at once, per instance. */
  listStreams: number;
  /** MAX_EVENT_STREAMS_PER_CLIENT: event streams (GET /bikes/changes) one client may have open at once, per instance. */
  eventStreams: number;
}

export class ConfigError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

function portNumber(name: string, text: string): number {
  if (!/^\d+$/.test(text) || Number(text) > 65535) {
    throw new ConfigError(`${name} must be a port number (0-65535), got "${text}"`);
  }
  return Number(text);
}

/**
 * NAME, or the contents of the file NAME_FILE names (without its final newline); not both. For
 * the settings that hold a secret (the signing secret, connection strings with their passwords),
 * so that it need not be in a process's or a container's environment.
 */
function settingOrFile(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const given = nonEmpty(env[name]);
  const file = nonEmpty(env[`${name}_FILE`]);
  if (file === undefined) return given;
  if (given !== undefined) throw new ConfigError(`${name} and ${name}_FILE are both set: set one of them`);
  try {
    return nonEmpty(fs.readFileSync(file, 'utf8').replace(/\r?\n$/, ''));
  } catch (err) {
    throw new ConfigError(`${name}_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code})`);
  }
}

/** A connection string's require_auth, if it has one, names what libpq's does (src/pg-require-auth.ts). */
function checkRequireAuth(name: string, url: string): void {
  let given: string | null;
  try {
    given = new URL(url).searchParams.get('require_auth');
  } catch {
    return; // pg reads more than a URL parser does; there is no require_auth to check then
  }
  try {
    requireAuthOf(given);
  } catch (err) {
    throw new ConfigError(`${name}: ${(err as Error).message}`);
  }
}

/** A secret anyone could guess is refused: too short, or a placeholder such as "aaaa...". */
function checkSecretStrength(secret: string): void {
  const bytes = Buffer.byteLength(secret);
  const distinct = new Set(secret).size;
  if (bytes < MIN_SECRET_BYTES || distinct < MIN_SECRET_DISTINCT_CHARACTERS) {
    throw new ConfigError(
      `JWT_SECRET must be at least ${MIN_SECRET_BYTES} bytes long with at least ${MIN_SECRET_DISTINCT_CHARACTERS} ` +
        `different characters, got ${bytes} bytes and ${distinct}; make one with: openssl rand -base64 32`,
    );
  }
}

/**
 * `signsTokens: false` is for the command-line tools (migrate, seed, psql), which use the
 * database settings only.
 */
export function readConfig(env: NodeJS.ProcessEnv = process.env, { signsTokens = true } = {}): Config {
  const port = portNumber('PORT', nonEmpty(env.PORT) ?? '3000');
  const metricsPortText = nonEmpty(env.METRICS_PORT);
  const metricsPort = metricsPortText === undefined ? undefined : portNumber('METRICS_PORT', metricsPortText);
  const metricsHostText = nonEmpty(env.METRICS_HOST);
  if (metricsHostText !== undefined && metricsPort === undefined) {
    throw new ConfigError('METRICS_HOST goes with METRICS_PORT, which is not set');
  }
  if (metricsHostText !== undefined && net.isIP(metricsHostText) === 0) {
    throw new ConfigError(
      `METRICS_HOST must be an IP address to listen on (such as 0.0.0.0), got "${metricsHostText}"`,
    );
  }
  const [databaseUrl, directUrl, replicaUrl] = ['DATABASE_URL', 'DATABASE_DIRECT_URL', 'DATABASE_REPLICA_URL'].map(
    (name) => {
      const url = settingOrFile(env, name);
      if (url !== undefined && !/^postgres(ql)?:\/\//.test(url)) {
        throw new ConfigError(`${name} must be a postgresql:// connection string`);
      }
      if (url !== undefined) checkRequireAuth(name, url);
      return url;
    },
  );
  if (databaseUrl === undefined && (directUrl ?? replicaUrl) !== undefined) {
    throw new ConfigError('DATABASE_DIRECT_URL and DATABASE_REPLICA_URL go with DATABASE_URL, which is not set');
  }
  const preparedStatements = nonEmpty(env.DATABASE_PREPARED_STATEMENTS) ?? 'auto';
  if (!isPreparedStatements(preparedStatements)) {
    throw new ConfigError(`DATABASE_PREPARED_STATEMENTS must be auto, on or off, got "${preparedStatements}"`);
  }
  const jwtSecret = settingOrFile(env, 'JWT_SECRET');
  if (signsTokens && jwtSecret !== undefined) checkSecretStrength(jwtSecret);
  if (signsTokens && databaseUrl !== undefined && jwtSecret === undefined) {
    throw new ConfigError(
      'JWT_SECRET is not set. With an external database (DATABASE_URL) the service needs a ' +
        'signing secret from you, so that every instance signs and verifies with the same one. ' +
        'Set JWT_SECRET, or JWT_SECRET_FILE to a file holding it, to a long random string, for example: openssl rand -base64 32',
    );
  }
  const tokenIssuance = nonEmpty(env.TOKEN_ISSUANCE) ?? 'open';
  if (tokenIssuance !== 'open' && tokenIssuance !== 'closed') {
    throw new ConfigError(`TOKEN_ISSUANCE must be open or closed, got "${tokenIssuance}"`);
  }
  const logLevel = nonEmpty(env.LOG_LEVEL) ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const limit = (name: string, fallback: number) => {
    const text = nonEmpty(env[name]) ?? String(fallback);
    if (!/^\d+$/.test(text) || Number(text) < 1)
      throw new ConfigError(`${name} must be a whole number of at least 1, got "${text}"`);
    return Number(text);
  };
  const limits = {
    tokensPerMinute: limit('RATE_LIMIT_TOKENS', 1_200),
    writesPerMinute: limit('RATE_LIMIT_WRITES', 100_000),
    listStreams: limit('MAX_LIST_STREAMS', 16),
    eventStreams: limit('MAX_EVENT_STREAMS_PER_CLIENT', 16),
  };
  return {
    port,
    databaseUrl,
    directUrl,
    replicaUrl,
    preparedStatements,
    dataDir: path.resolve(nonEmpty(env.DATA_DIR) ?? path.join(__dirname, '..', '.data')),
    jwtSecret,
    tokenIssuance,
    identityProvider: identityProvider(env),
    metricsPort,
    metricsHost: metricsHostText ?? '127.0.0.1',
    corsOrigin: nonEmpty(env.CORS_ORIGIN),
    logLevel,
    limits,
    trustedProxies: trustedProxies(nonEmpty(env.TRUST_PROXY)),
    changesRetentionDays: limit('CHANGES_RETENTION_DAYS', 30),
    historyRetentionDays: ['keep', undefined].includes(nonEmpty(env.HISTORY_RETENTION_DAYS))
      ? null
      : limit('HISTORY_RETENTION_DAYS', 1),
    maxEventStreams: limit('MAX_EVENT_STREAMS', 1_000),
    webhookRetryDelays: webhookRetryDelays(nonEmpty(env.WEBHOOK_RETRY_DELAYS) ?? DEFAULT_RETRY_DELAYS),
    readCacheEntries: readCacheEntries(nonEmpty(env.READ_CACHE_ENTRIES) ?? String(DEFAULT_READ_CACHE_ENTRIES)),
  };
}

/** READ_CACHE_ENTRIES's default. */
const DEFAULT_READ_CACHE_ENTRIES = 0;

function readCacheEntries(text: string): number {
  if (!/^\d{1,9}$/.test(text)) {
    throw new ConfigError(`READ_CACHE_ENTRIES must be a whole number (0: no read cache), got "${text}"`);
  }
  return Number(text);
}

function webhookRetryDelays(text: string): number[] {
  const delays = retryDelaysOf(text);
  if (delays === undefined) {
    throw new ConfigError(
      `WEBHOOK_RETRY_DELAYS must be durations separated by commas, each a whole number and ms, s, m, h or d ` +
        `(such as ${DEFAULT_RETRY_DELAYS}), got "${text}"`,
    );
  }
  return delays;
}

const isPreparedStatements = (value: string): value is PreparedStatements => ['auto', 'on', 'off'].includes(value);

/** An IPv4 address of this machine only (127.0.0.0/8), or localhost (reached as 127.0.0.1). */
function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || (net.isIPv4(hostname) && hostname.startsWith('127.'));
}

/** A user named or numbered in JWT_JWKS_OWNER: its uid. */
function uidOf(user: string): number {
  if (/^\d+$/.test(user)) return Number(user);
  try {
    return Number(execFileSync('id', ['-u', user], { stdio: 'pipe' }).toString().trim());
  } catch {
    throw new ConfigError(`JWT_JWKS_OWNER: there is no user "${user}"`);
  }
}

/**
 * Where the identity provider's keys come from, and who may serve them (docs/reference/callers.md#who-may-write):
 * JWT_JWKS_FILE, a file only root (or the service's user) can change; or JWT_JWKS_URL, over TLS,
 * or in clear from this machine only, from a listener proved to run as root, as the service's
 * user, or as JWT_JWKS_OWNER. A key set fetched in clear from elsewhere, or from whoever holds a
 * loopback port, could be anyone's.
 */
function keySetSource(env: NodeJS.ProcessEnv, url: string | undefined, file: string | undefined): KeySetSource {
  const owner = nonEmpty(env.JWT_JWKS_OWNER);
  if (file !== undefined) {
    if (url !== undefined) throw new ConfigError('JWT_JWKS_URL and JWT_JWKS_FILE are both set: set one of them');
    if (owner !== undefined) throw new ConfigError('JWT_JWKS_OWNER goes with an http:// JWT_JWKS_URL');
    if (!path.isAbsolute(file) || !fs.existsSync(file)) {
      throw new ConfigError(`JWT_JWKS_FILE must name an existing file by its absolute path, got "${file}"`);
    }
    return { file };
  }
  const jwksUrl = URL.parse(url ?? '');
  const plain = jwksUrl?.protocol === 'http:';
  if (jwksUrl === null || !(jwksUrl.protocol === 'https:' || (plain && isLoopback(jwksUrl.hostname)))) {
    throw new ConfigError(
      `JWT_JWKS_URL must be an https:// URL (http:// only to this machine: 127.0.0.1 or localhost), got "${url}"`,
    );
  }
  if (!plain) {
    if (owner !== undefined) throw new ConfigError('JWT_JWKS_OWNER goes with an http:// JWT_JWKS_URL');
    return { url: jwksUrl, owners: [] };
  }
  // The proof reads /proc/net/tcp: elsewhere a loopback port is whoever's holds it.
  if (process.platform !== 'linux') {
    throw new ConfigError('JWT_JWKS_URL may be http:// on Linux only: use https:// or JWT_JWKS_FILE');
  }
  const owners = [0, process.getuid?.() ?? 0, ...(owner === undefined ? [] : [uidOf(owner)])];
  return { url: jwksUrl, owners: [...new Set(owners)] };
}

/**
 * The identity provider: its key set (a URL or a file) with the issuer and audience its tokens
 * must carry, all three or none.
 */
function identityProvider(env: NodeJS.ProcessEnv): IdentityProvider | undefined {
  const url = nonEmpty(env.JWT_JWKS_URL);
  const file = nonEmpty(env.JWT_JWKS_FILE);
  const issuer = nonEmpty(env.JWT_ISSUER);
  const audience = nonEmpty(env.JWT_AUDIENCE);
  if (url === undefined && file === undefined) {
    const stray = ['JWT_ISSUER', 'JWT_AUDIENCE', 'JWT_JWKS_OWNER', 'JWT_SCOPE_MAP'].find(
      (name) => nonEmpty(env[name]) !== undefined,
    );
    if (stray !== undefined)
      throw new ConfigError(`${stray} goes with JWT_JWKS_URL or JWT_JWKS_FILE, neither of which is set`);
    return undefined;
  }
  if (issuer === undefined || audience === undefined) {
    throw new ConfigError(
      `${issuer === undefined ? 'JWT_ISSUER' : 'JWT_AUDIENCE'} must be set with JWT_JWKS_URL or JWT_JWKS_FILE: the ` +
        "identity provider's tokens are accepted only with the issuer and audience they must carry",
    );
  }
  if (issuer === OPERATOR_ISSUER) {
    throw new ConfigError(`JWT_ISSUER must not be ${OPERATOR_ISSUER}, the issuer of the operator's own tokens`);
  }
  const scopeMap = nonEmpty(env.JWT_SCOPE_MAP);
  return {
    keySet: keySetSource(env, url, file),
    issuer,
    audience,
    ...(scopeMap === undefined ? {} : { scopeNames: scopeNames(scopeMap) }),
  };
}

/**
 * JWT_SCOPE_MAP: `theirs=ours` pairs, comma-separated (`catalog.edit=bikes:write,catalog.admin=bikes:delete`;
 * a name of theirs given twice grants both): how the provider names our scopes (docs/reference/callers.md#scopes).
 */
function scopeNames(text: string): Record<string, Scope[]> {
  const names: Record<string, Scope[]> = {};
  for (const pair of text.split(',').map((entry) => entry.trim())) {
    const [theirs, ours, ...rest] = pair.split('=').map((side) => side.trim());
    if (!theirs || ours === undefined || rest.length > 0 || !isScope(ours)) {
      throw new ConfigError(
        `JWT_SCOPE_MAP must be <provider's scope>=<scope> pairs, comma-separated, each scope one of ` +
          `${ALL_SCOPES.join(', ')}; got "${pair}"`,
      );
    }
    names[theirs] = [...(names[theirs] ?? []), ours];
  }
  return names;
}

/**
 * TRUST_PROXY: a number of proxies; `true` is one (the setting once meant "behind a proxy"),
 * unset or `false` none. Anything else is refused rather than guessed: trusting too many lets a
 * client choose its own address, and with it escape its limits (docs/reference/callers.md#trusted-proxies).
 */
function trustedProxies(text: string | undefined): number {
  const value = text?.trim().toLowerCase();
  if (value === undefined || value === 'false') return 0;
  if (value === 'true') return 1;
  if (!/^\d+$/.test(value)) {
    throw new ConfigError(
      `TRUST_PROXY must be the number of proxies in front of the service (or true for 1), got "${text}"`,
    );
  }
  return Number(value);
}
