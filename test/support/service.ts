import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { readConfig } from '../../src/config';
import type { Logger } from '../../src/logger';
import { startService, type Service, type ServiceTuning } from '../../src/server';
import { issueToken } from './bikes';
import { createTestDatabase } from './databases';

export interface TestService {
  baseUrl: string;
  databaseUrl: string;
  jwtSecret: string;
  service: Service;
  /** A fresh token from POST /api/user. */
  token(username?: string): Promise<string>;
  stop(): Promise<void>;
}

/**
 * The real service, listening on a free port, over its own fresh database. It runs in the
 * test process, so it is the same code `npm start` runs, minus the process wrapper.
 */
export async function startTestService(
  options: {
    databaseUrl?: string;
    jwtSecret?: string;
    env?: Record<string, string>;
    logger?: Logger;
    tuning?: ServiceTuning;
  } = {},
): Promise<TestService> {
  const databaseUrl = options.databaseUrl ?? (await createTestDatabase());
  const jwtSecret = options.jwtSecret ?? randomBytes(32).toString('base64url');
  const config = readConfig({ PORT: '0', DATABASE_URL: databaseUrl, JWT_SECRET: jwtSecret, ...options.env });
  const service = await startService(config, options.logger ?? pino({ level: 'silent' }), options.tuning);
  const baseUrl = `http://127.0.0.1:${service.port}`;
  return {
    baseUrl,
    databaseUrl,
    jwtSecret,
    service,
    token: (username) => issueToken(baseUrl, username),
    stop: () => service.stop(),
  };
}
