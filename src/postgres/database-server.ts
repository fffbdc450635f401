import type { Logger } from '../logger';
import { startEmbeddedPostgres } from './embedded-postgres';

export interface DatabaseServer {
  url: string;
  /** For what needs a session (migrations): DATABASE_DIRECT_URL, or `url`. */
  directUrl: string;
  /** A streaming replica for reads (DATABASE_REPLICA_URL), if any. */
  replicaUrl?: string;
  /** Stops the embedded PostgreSQL; nothing for an external database. */
  stop(): Promise<void>;
  /** For short-lived tools: stops the embedded PostgreSQL only if this process started it. */
  release(): Promise<void>;
}

/** DATABASE_URL when given, otherwise the embedded PostgreSQL in the data directory. */
export async function openDatabaseServer(
  options: { databaseUrl?: string; directUrl?: string; replicaUrl?: string; dataDir: string },
  logger: Logger,
): Promise<DatabaseServer> {
  if (options.databaseUrl) {
    const nothing = async () => undefined;
    return {
      url: options.databaseUrl,
      directUrl: options.directUrl ?? options.databaseUrl,
      replicaUrl: options.replicaUrl,
      stop: nothing,
      release: nothing,
    };
  }
  const embedded = await startEmbeddedPostgres({
    dataDir: options.dataDir,
    log: (message) => logger.info(message),
  });
  return {
    url: embedded.url,
    directUrl: embedded.url,
    stop: () => embedded.stop(),
    release: async () => {
      if (embedded.startedHere) await embedded.stop();
    },
  };
}
