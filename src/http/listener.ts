import http, { STATUS_CODES } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * The node:http server under the Koa app: its limits against slow and oversized clients, and a
 * graceful close. Hand-written because no library drains alike: http-terminator keeps accepting
 * during the grace and holds a streamed response for all of it, stoppable sends no
 * `Connection: close`, http-graceful-shutdown destroys sockets (a 413 then lost to a reset).
 */

const LIMITS = {
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

/** A closing connection drops what its client still sends until it is quiet, for LINGER_MS at most. */
const LINGER_MS = 2_000;
const LINGER_QUIET_MS = 500;
const lingering = new WeakSet<Socket>();

/**
 * Closes a connection so that its client can read the last response: closing at once with unread
 * bytes (the rest of a refused body) makes the kernel send a reset, which can discard the 413 or
 * 431 from the client's buffers before it is read.
 */
function lingeringClose(socket: Socket): void {
  if (lingering.has(socket) || socket.destroyed) return;
  lingering.add(socket);
  const destroy = () => socket.destroy();
  const cap = setTimeout(destroy, LINGER_MS);
  const quiet = setTimeout(destroy, LINGER_QUIET_MS);
  // Node's HTTP parser stops here: the rest is not a request.
  socket.removeAllListeners('data');
  socket.on('data', () => quiet.refresh());
  socket.on('error', destroy);
  socket.once('end', destroy);
  socket.once('close', () => {
    clearTimeout(cap);
    clearTimeout(quiet);
  });
  socket.end();
  socket.resume();
}

/**
 * Responses whose client sent `Expect: 100-continue` and waits for `100 Continue` before it sends
 * the body. Node would send it at once, before the app could refuse the request by its headers
 * (a 401, a 413): the app sends it only when it is about to read the body
 * (docs/reference/http.md#100-continue).
 */
const awaitingContinue = new WeakSet<http.ServerResponse>();

/** Asks for the body of a request whose client waits for `100 Continue` (once; else nothing). */
export function inviteBody(res: http.ServerResponse): void {
  if (awaitingContinue.delete(res) && !res.headersSent) res.writeContinue();
}

/**
 * What the listener answers before any route sees the request, whatever its path: each status and
 * what it means, declared once (the OpenAPI document gives them to every operation and to the
 * requests no operation serves). No header of the API's: they are answered before there is one.
 */
export const LISTENER_ANSWERS = {
  400:
    'Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not ' +
    'end in chunked, a request line or header node cannot parse); the connection closes.',
  408: `The request line and headers took over ${LIMITS.headersTimeout / 1000} s, or the whole request over ${LIMITS.requestTimeout / 1000} s; the connection closes.`,
  413: "Before any route: chunk extensions over the parser's limit; the connection closes.",
  417: 'An Expect other than `100-continue`: it cannot be met.',
  431: `The request headers are larger than ${LIMITS.maxHeaderSize / 1024} KB; the connection closes.`,
} as const;

/** The listener's answers that carry a body: its own refusal of a malformed request ('Bad Request', text/plain). */
export const LISTENER_BODIES: readonly number[] = [400];

/** Node's answers to requests its parser refuses (otherwise 400), sent the same way, but closed lingeringly. */
const CLIENT_ERROR_STATUS: Record<string, number> = {
  HPE_HEADER_OVERFLOW: 431,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
};

/**
 * A Transfer-Encoding that does not end in chunked leaves the length unknowable (RFC 9112, 6.3),
 * where node would read to the end of the connection, next requests included.
 */
function isUnframed(req: http.IncomingMessage): boolean {
  const transferEncoding = req.headers['transfer-encoding'];
  return transferEncoding !== undefined && !/(^|,)\s*chunked\s*$/i.test(transferEncoding);
}

/**
 * Two Host lines leave the target's authority ambiguous (RFC 9112, 3.2: 400), where node keeps
 * the first and a proxy in front may have read the other (docs/reference/http.md#one-host).
 */
function hasSeveralHosts(req: http.IncomingMessage): boolean {
  let hosts = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i].toLowerCase() === 'host') hosts++;
  return hosts > 1;
}

/** A request node's parser lets through that we cannot read safely: 400, and the connection closes. */
function refuseMalformed(req: http.IncomingMessage, res: http.ServerResponse): boolean {
  if (!isUnframed(req) && !hasSeveralHosts(req)) return false;
  res.shouldKeepAlive = false;
  res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': '11' }).end('Bad Request');
  return true;
}

function onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  const inFlight = (socket as Socket & { _httpMessage?: http.ServerResponse })._httpMessage;
  if (lingering.has(socket) || !socket.writable || err.code === 'ECONNRESET' || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const status = CLIENT_ERROR_STATUS[err.code ?? ''] ?? 400;
  socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  // A response the app has not started yet must not write after this: end it here as node does.
  if (inFlight) socket.destroy();
  else lingeringClose(socket);
}

/**
 * Why the port could not be had, and what to do, in one line: node's own error ("listen
 * EADDRINUSE: address already in use :::3000") says neither.
 */
function listenFailure(err: NodeJS.ErrnoException, port: number): Error {
  if (err.code === 'EADDRINUSE') {
    return new Error(
      `port ${port} is already in use (is another \`npm start\` or \`npm run dev\` running?); set PORT to another port`,
      {
        cause: err,
      },
    );
  }
  if (err.code === 'EACCES') {
    return new Error(`port ${port} needs privileges this process does not have; set PORT to a port above 1023`, {
      cause: err,
    });
  }
  return err;
}

/** `host` unset: every interface. */
export async function listen(handler: Handler, port: number, host?: string): Promise<Listener> {
  let closing = false;
  const open = new Set<http.ServerResponse>();

  /** What every response gets before anyone answers: false when it was answered here. */
  const prepare = (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
    if (refuseMalformed(req, res)) return false;
    open.add(res);
    res.once('close', () => open.delete(res));
    // A streamed answer gathers about a dozen 'close' listeners, each once per response: this
    // one, the request log's, the metrics', the list's own, Koa's and stream.pipeline's.
    res.setMaxListeners(20);
    // We never switch protocols; and after a request that asked to, node's parser does not
    // reliably read the next one on the same connection: the client gets a fresh connection.
    if (closing || req.headers.upgrade !== undefined) res.shouldKeepAlive = false;
    return true;
  };
  const handle: Handler = (req, res) => {
    if (prepare(req, res)) handler(req, res);
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
  server.on('clientError', onClientError);
  // The app decides whether to ask for the body (inviteBody); node closes the connection after an
  // answer given without it, so the unsent body is never taken for the next request.
  server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => {
    awaitingContinue.add(res);
    handle(req, res);
  });
  // An Expect other than 100-continue: 417, as node answers it, but never to a malformed request.
  server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (prepare(req, res)) res.writeHead(417, { 'Content-Length': '0' }).end();
  });
  // Node ends a connection after a `Connection: close` response with destroySoon(): linger instead.
  server.on('connection', (socket: Socket) => {
    socket.destroySoon = () => lingeringClose(socket);
  });

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
      lingeringClose(socket);
    });
    handle(req, res);
  });

  await new Promise<void>((resolve, reject) => {
    const fail = (err: NodeJS.ErrnoException) => reject(listenFailure(err, port));
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
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
