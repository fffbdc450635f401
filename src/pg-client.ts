import type { Duplex } from 'node:stream';
import { Client, type ClientConfig } from 'pg';

/**
 * The server at the other end of a connection is not one to use: it sent what pg cannot read, or
 * it could not be proved to be our own (src/postgres/own-server.ts). The connection is closed,
 * and whatever waited on it fails with this error: the database is unavailable (503), and
 * nothing was written.
 */
export class UnusableServerError extends Error {}

/**
 * pg reads what the server sends in a 'data' listener of the socket (pg-protocol's parse()), and
 * hands each message to the client's listeners from there. Whatever throws on that path (pg's
 * parser on a message it does not know, such as a request for GSSAPI or SSPI authentication, or a
 * length that runs past its message; or a listener that refuses a message) has no caller but the
 * socket: an uncaught exception, which stops the process. On `stream`, such an error closes the
 * connection instead, and reaches whoever waits on it.
 */
function closeOnUnreadable(stream: Duplex): void {
  const emit = stream.emit.bind(stream) as (event: string | symbol, ...args: unknown[]) => boolean;
  stream.emit = ((event: string | symbol, ...args: unknown[]): boolean => {
    if (event !== 'data') return emit(event, ...args);
    try {
      return emit(event, ...args);
    } catch (err) {
      stream.destroy(
        err instanceof UnusableServerError
          ? err
          : new UnusableServerError(`the database server sent what cannot be read: ${(err as Error).message}`, {
              cause: err,
            }),
      );
      return false;
    }
  }) as Duplex['emit'];
}

/**
 * pg's Client, for every connection the service and its tools make: nothing a server (or whoever
 * holds its port) sends can end the process.
 */
export class GuardedClient extends Client {
  constructor(config?: string | ClientConfig) {
    super(config);
    closeOnUnreadable(this.connection.stream);
    // TLS replaces the stream (pg's upgradeToSSL) before anything is read from the new one.
    this.connection.on('sslconnect', () => closeOnUnreadable(this.connection.stream));
    // A connection that breaks fails its query in flight and every one after, which is how its
    // user hears of it; pg emits it as 'error' too, and an 'error' no one listens for would end
    // the process.
    this.on('error', () => undefined);
  }
}
