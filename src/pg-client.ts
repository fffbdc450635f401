import type { Duplex } from 'node:stream';
import { Client, type ClientConfig } from 'pg';
import { conversation, type Heard } from './pg-conversation';
import { acceptedAuth, authenticationCheck } from './pg-require-auth';

/**
 * The server at the other end of a connection is not one to use: it sent what pg cannot read or
 * what the connection's state does not allow, or it could not be proved to be our own
 * (src/postgres/own-server.ts), or asked us to authenticate in a way we do not accept. The
 * connection is closed, and whatever waited on it fails with this error: the database is
 * unavailable (503), and for a statement already sent, its outcome unknown (504).
 */
export class UnusableServerError extends Error {}

/** The server asked to be authenticated in a way the connection does not accept (require_auth): nothing was sent. */
class AuthenticationRefused extends UnusableServerError {}

/**
 * Until the connection is ready (its first ReadyForQuery), no message may be longer than libpq
 * allows in that phase (30,000 bytes, its bound on an error while connecting; a request to
 * authenticate is far shorter), nor all of them together more than 1 MiB (a real server sends a
 * few hundred bytes). pg-protocol's parser buffers whatever length a message announces, up to
 * 4 GiB: a server not yet proved ours, or whoever holds its port, could otherwise fill memory.
 */
const STARTUP_MESSAGE_MAX = 30_000;
const STARTUP_BYTES_MAX = 1 << 20;

/**
 * Reads the frames (a type byte, a length) of what the server sends until its first
 * ReadyForQuery: why a chunk breaks the bounds above, or undefined.
 */
function startupBounds(): (chunk: Buffer) => string | undefined {
  let ready = false;
  let total = 0;
  let header = Buffer.alloc(0);
  let remaining = 0;
  return (chunk) => {
    if (ready) return undefined;
    total += chunk.length;
    if (total > STARTUP_BYTES_MAX) return `it sent over ${STARTUP_BYTES_MAX} bytes before the connection was ready`;
    for (let at = 0; at < chunk.length;) {
      if (remaining > 0) {
        const skipped = Math.min(remaining, chunk.length - at);
        remaining -= skipped;
        at += skipped;
        continue;
      }
      const taken = chunk.subarray(at, at + 5 - header.length);
      header = Buffer.concat([header, taken]);
      at += taken.length;
      if (header.length < 5) break;
      const [type, length] = [header[0], header.readUInt32BE(1)];
      header = Buffer.alloc(0);
      if (length < 4 || length + 1 > STARTUP_MESSAGE_MAX) {
        return `it announced a message of ${length + 1} bytes before the connection was ready`;
      }
      remaining = length - 4;
      // ReadyForQuery ('Z'): what follows are answers to queries, rows of any size.
      if (type === 0x5a) ready = true;
      if (ready) return undefined;
    }
    return undefined;
  };
}

/**
 * pg reads what the server sends in a 'data' listener of the socket (pg-protocol's parse()), and
 * hands each message to the client's listeners from there. Whatever throws on that path (pg's
 * parser on a message it does not know, such as a request for GSSAPI or SSPI authentication, or a
 * length that runs past its message; or a listener that refuses a message) has no caller but the
 * socket: an uncaught exception, which stops the process. On `stream`, such an error closes the
 * connection instead, and reaches whoever waits on it; so does a chunk `bounds` refuses, before
 * pg buffers it.
 */
function closeOnUnreadable(
  stream: Duplex,
  close: (err: UnusableServerError) => void,
  bounds?: (chunk: Buffer) => string | undefined,
): void {
  const emit = stream.emit.bind(stream) as (event: string | symbol, ...args: unknown[]) => boolean;
  stream.emit = ((event: string | symbol, ...args: unknown[]): boolean => {
    if (event !== 'data') return emit(event, ...args);
    try {
      const beyond = bounds?.(args[0] as Buffer);
      if (beyond) throw new UnusableServerError(`the database server is not one to use: ${beyond}`);
      return emit(event, ...args);
    } catch (err) {
      close(
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

/** The connection string in pg's `config`, if any. */
const connectionStringOf = (config?: string | ClientConfig) =>
  typeof config === 'string' ? config : config?.connectionString;

/**
 * pg's Client, for every connection the service and its tools make: nothing a server (or whoever
 * holds its port) sends can end the process, or cost more than a bounded start-up
 * (STARTUP_MESSAGE_MAX); a message the connection's state does not expect closes it before pg
 * acts on it (src/pg-conversation.ts); and it authenticates only in a way it accepts
 * (src/pg-require-auth.ts).
 */
export class GuardedClient extends Client {
  constructor(config?: string | ClientConfig) {
    super(config);
    const { connection } = this;
    const close = (err: UnusableServerError) => {
      connection.stream.destroy(err);
      this.closedBecause(err);
    };
    // With TLS, pg parses what the TLS stream it makes (upgradeToSSL) reads, never the socket's
    // bytes, of which it reads only the one-byte answer to its SSLRequest itself.
    closeOnUnreadable(connection.stream, close, (connection as { ssl?: unknown }).ssl ? undefined : startupBounds());
    connection.on('sslconnect', () => closeOnUnreadable(connection.stream, close, startupBounds()));

    // What the client sends is recorded as it is sent, so that the answers expected are known.
    const talk = conversation();
    const methods = connection as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const name of ['parse', 'bind', 'execute', 'close', 'sync', 'query', 'describe'] as const) {
      const send = methods[name];
      methods[name] = (...args: unknown[]) => {
        const portal = name === 'describe' && (args[0] as { type?: string } | undefined)?.type === 'P';
        talk.sent(name !== 'describe' ? name : portal ? 'describePortal' : 'describeStatement');
        return send.apply(connection, args);
      };
    }

    const where = `${this.host}:${this.port}`;
    const accepted = acceptedAuth(connectionStringOf(config), this.host, Boolean(this.password));
    const checkAuthentication = accepted && authenticationCheck(accepted);
    // pg emits each message as 'message' before its own listeners hear it by name: one this
    // throws on, pg never acts on, and the connection closes with the error before anything more
    // is sent.
    connection.on('message', (message: Heard) => {
      const refused = checkAuthentication?.(message.name);
      if (refused) {
        throw new AuthenticationRefused(`refused to authenticate to the database server on ${where}: ${refused}`);
      }
      const unexpected = talk.hear(message);
      if (unexpected) {
        throw new UnusableServerError(`the database server on ${where} broke the protocol: ${unexpected}`);
      }
    });
    // A connection that breaks fails its query in flight and every one after, which is how its
    // user hears of it; pg emits it as 'error' too, and an 'error' no one listens for would end
    // the process.
    this.on('error', () => undefined);
  }

  /** Heard when the connection is closed because of what its server did (a subclass may log it). */
  protected closedBecause(err: UnusableServerError): void {
    void err;
  }
}

/**
 * GuardedClient, logging each distinct refusal to authenticate once (the service's pool tries
 * again and again while the server asks the same): what the operator must fix, or who holds the
 * port.
 */
export function loggingRefusals(log: (message: string) => void): typeof Client {
  const logged = new Set<string>();
  return class extends GuardedClient {
    protected override closedBecause(err: UnusableServerError): void {
      if (!(err instanceof AuthenticationRefused) || logged.has(err.message)) return;
      logged.add(err.message);
      log(err.message);
    }
  };
}
