import type { Client } from 'pg';
import { loggingRefusals } from '../pg-client';
import type { Logger } from '../logger';
import { startEmbeddedPostgres } from './embedded-postgres';

export interface DatabaseServer {
  /** Where the service's queries go (DATABASE_URL, or the embedded server as the service's own role). */
  url: string;
  /**
   * For what may need more rights (migrations): DATABASE_DIRECT_URL, or `url`; with the
   * embedded server, its superuser. A transaction pooler will do: nothing here needs a session.
   */
  directUrl: string;
  /** A streaming replica for reads (DATABASE_REPLICA_URL), if any. */
  replicaUrl?: string;
  /**
   * The pg Client for connections to these URLs, which no server can crash (GuardedClient): for
   * the embedded server, one that authenticates only to that server, wherever it runs now
   * (docs/running-as-root.md#proving-a-server-is-ours).
   */
  ServerClient: typeof Client;
  /** Stops the embedded PostgreSQL unless another process still uses it; nothing for an external database. */
  stop(): Promise<void>;
}

/** DATABASE_URL when given, otherwise the embedded PostgreSQL in the data directory. */
export async function openDatabaseServer(
  options: { databaseUrl?: string; directUrl?: string; replicaUrl?: string; dataDir: string; port?: number },
  logger: Logger,
): Promise<DatabaseServer> {
  if (options.databaseUrl) {
    return {
      url: options.databaseUrl,
      directUrl: options.directUrl ?? options.databaseUrl,
      replicaUrl: options.replicaUrl,
      // A refusal to authenticate (require_auth) is logged once, not at each of the pool's attempts.
      ServerClient: loggingRefusals((message) => logger.error(message)),
      stop: async () => undefined,
    };
  }
  const embedded = await startEmbeddedPostgres({
    dataDir: options.dataDir,
    notPort: options.port,
    log: (message) => logger.info(message),
    warn: (message) => logger.warn(message),
  });
  return {
    url: embedded.url,
    directUrl: embedded.adminUrl,
    ServerClient: embedded.ServerClient,
    // Stopped by the last process that uses it: never under another instance.
    stop: () => embedded.stop(),
  };
}
