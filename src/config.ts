import path from 'node:path';

/** Everything the service reads from its environment, validated once at start-up. */
export interface Config {
  port: number;
  /** Unset: the service runs its own embedded PostgreSQL in `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** Unset: with the embedded database a secret is created once in `dataDir`. */
  jwtSecret: string | undefined;
  /** Origin allowed to call the API from a browser; CORS is off when unset. */
  corsOrigin: string | undefined;
  logLevel: string;
}

export class ConfigError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const portText = nonEmpty(env.PORT) ?? '3000';
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) {
    throw new ConfigError(`PORT must be a port number (0-65535), got "${portText}"`);
  }
  const databaseUrl = nonEmpty(env.DATABASE_URL);
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgresql:// connection string');
  }
  const jwtSecret = nonEmpty(env.JWT_SECRET);
  if (databaseUrl !== undefined && jwtSecret === undefined) {
    throw new ConfigError(
      'JWT_SECRET is not set. With an external database (DATABASE_URL) the service needs a ' +
        'signing secret from you, so that every instance signs and verifies with the same one. ' +
        'Set JWT_SECRET to a long random string, for example: openssl rand -base64 32',
    );
  }
  const logLevel = nonEmpty(env.LOG_LEVEL) ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  return {
    port,
    databaseUrl,
    dataDir: path.resolve(nonEmpty(env.DATA_DIR) ?? path.join(__dirname, '..', '.data')),
    jwtSecret,
    corsOrigin: nonEmpty(env.CORS_ORIGIN),
    logLevel,
  };
}
