import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * The node:http server under the Koa app: its limits against slow and oversized clients, and a
 * graceful close. Kept apart from the app so tests and the process entry share one definition.
 */

export const LIMITS = {
  /** Room for a 100 KB Authorization header, so an oversized token is judged (403), not refused. */
  maxHeaderSize: 256 * 1024,
  /** A client must finish its request line and headers within this time (else 408, closed). */
  headersTimeout: 10_000,
  /** ... and its whole request, body included, within this time. */
  requestTimeout: 30_000,
  /** An idle keep-alive connection is closed after this time. */
  keepAliveTimeout: 5_000,
  /** A connection on which nothing moves either way (a client that stopped reading) is cut. */
  socketIdleTimeout: 60_000,
  /** How often node checks the two request timeouts above (its default, 30 s, lets a slowloris hold on for 40 s). */
  connectionsCheckingInterval: 1_000,
} as const;

export interface Listener {
  port: number;
  /**
   * Stops accepting connections at once, lets requests in flight finish (each answered with
   * `Connection: close`), closes idle connections as they appear, and after `graceMs` cuts
   * whatever is left. Resolves when every connection is gone.
   */
  close(graceMs: number): Promise<void>;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export async function listen(handler: Handler, port: number): Promise<Listener> {
  let closing = false;
  const open = new Set<http.ServerResponse>();

  const handle: Handler = (req, res) => {
    open.add(res);
    res.once('close', () => open.delete(res));
    if (closing) res.shouldKeepAlive = false;
    handler(req, res);
  };

  const server = http.createServer(
    {
      maxHeaderSize: LIMITS.maxHeaderSize,
      headersTimeout: LIMITS.headersTimeout,
      requestTimeout: LIMITS.requestTimeout,
      keepAliveTimeout: LIMITS.keepAliveTimeout,
      connectionsCheckingInterval: LIMITS.connectionsCheckingInterval,
    },
    handle,
  );
  server.setTimeout(LIMITS.socketIdleTimeout);

  // Node passes CONNECT requests to this event and drops the connection when nobody listens.
  // The app answers them like any other request (404 or 405), then the connection closes.
  server.on('connect', (req: http.IncomingMessage, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    socket.setTimeout(LIMITS.socketIdleTimeout, () => socket.destroy());
    const res = new http.ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket);
    res.once('finish', () => {
      res.detachSocket(socket);
      socket.destroySoon();
    });
    handle(req, res);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, () => {
      server.off('error', reject);
      resolve();
    });
  });

  return {
    port: (server.address() as AddressInfo).port,
    async close(graceMs) {
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Responses not yet started tell their client that this connection ends with them.
      for (const res of open) if (!res.headersSent) res.shouldKeepAlive = false;
      server.closeIdleConnections();
      // A response that finished after the line above leaves an idle keep-alive connection.
      const sweeper = setInterval(() => server.closeIdleConnections(), 100);
      const cutoff = setTimeout(() => server.closeAllConnections(), graceMs);
      try {
        await closed;
      } finally {
        clearInterval(sweeper);
        clearTimeout(cutoff);
      }
    },
  };
}
