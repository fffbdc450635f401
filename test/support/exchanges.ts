import diagnostics from 'node:diagnostics_channel';
import net from 'node:net';
import type { Exchange } from './conformance';

/**
 * Every HTTP exchange this process has, read off its sockets: whatever the client (fetch,
 * node:http, a raw socket, the event-stream reader), the bytes it wrote and those it received,
 * cut into requests and answers by HTTP/1.1's framing (RFC 9112). Node announces every socket
 * net.connect makes, the HTTP clients' included, on the `net.client.socket` channel; a socket
 * whose peer's first bytes are not `HTTP/` (PostgreSQL's) is left alone. Reading is passive: the
 * bytes are copied as the socket takes them in and writes them out, so a client that stops
 * reading still stops the flow.
 */

export interface TappedExchange extends Exchange {
  /** `http://127.0.0.1:<port>`: the server's address. */
  origin: string;
  /** What the process was doing when the request was written (a test's name). */
  label: string;
}

interface Tap {
  /** Stops tapping, and gives every exchange tapped, as far as each has come, in order. */
  stop(): TappedExchange[];
}

const SOCKET_CHANNEL = 'net.client.socket';

/** A socket of the process's own, not to be tapped (the checker's own fetch of a document). */
let untappedDepth = 0;

/** Runs `connect` (which must open its socket synchronously: node:http with `agent: false`) untapped. */
export function untapped<T>(connect: () => T): T {
  untappedDepth++;
  try {
    return connect();
  } finally {
    untappedDepth--;
  }
}

/**
 * Taps every socket this process opens from now on; `onServer` is told the address of each HTTP
 * server as soon as it first answers. The bytes are only copied while the tap runs: cutting them
 * into exchanges waits for stop(), so the tests' process (and a service running in it) is not
 * held up meanwhile.
 */
export function tapExchanges({ label, onServer }: { label: () => string; onServer: (origin: string) => void }): Tap {
  const tapped: (() => TappedExchange[])[] = [];
  const subscriber = (message: unknown) => {
    if (untappedDepth === 0) tapped.push(tapSocket((message as { socket: net.Socket }).socket, label, onServer));
  };
  diagnostics.subscribe(SOCKET_CHANNEL, subscriber);
  return {
    stop() {
      diagnostics.unsubscribe(SOCKET_CHANNEL, subscriber);
      return tapped.flatMap((exchanges) => exchanges());
    },
  };
}

/** What a tap does with the bytes of a socket: those written (as `write` takes them), and those received (null: the end). */
interface Observer {
  sent(chunk: unknown, encoding: unknown): void;
  received(chunk: unknown): void;
}

const OBSERVERS = Symbol('observers of the bytes of this socket');
type Watched = net.Socket & { [OBSERVERS]?: Observer[] };

/**
 * Lets `observer` see the bytes that go through `socket`, as its `write` and `end` are given them
 * and its `push` takes them in: wrapped once, for every tap that watches it.
 */
function watch(socket: Watched, observer: Observer): void {
  if (socket[OBSERVERS]) return void socket[OBSERVERS].push(observer);
  const observers = (socket[OBSERVERS] = [observer]);
  // net's Socket#connect sets `write` afresh on the socket (after this runs): every value it is
  // given is kept, and what is read is that value, wrapped.
  let write = socket.write;
  const wrappers = new WeakMap<typeof write, typeof write>();
  Object.defineProperty(socket, 'write', {
    configurable: true,
    get() {
      let wrapped = wrappers.get(write);
      if (!wrapped) {
        const inner = write;
        wrapped = function (this: net.Socket, ...args: Parameters<typeof inner>) {
          for (const each of observers) each.sent(args[0], args[1]);
          return inner.apply(this, args);
        } as typeof write;
        wrappers.set(inner, wrapped);
      }
      return wrapped;
    },
    set(value: typeof write) {
      write = value;
    },
  });
  const end = socket.end;
  socket.end = function (this: net.Socket, ...args: unknown[]) {
    if (typeof args[0] !== 'function') for (const each of observers) each.sent(args[0], args[1]);
    return end.apply(this, args as Parameters<typeof end>);
  } as typeof end;
  const push = socket.push;
  socket.push = function (this: net.Socket, chunk: unknown, encoding?: BufferEncoding) {
    for (const each of observers) each.received(chunk);
    return push.call(this, chunk, encoding);
  };
}

/** Copies what goes through `socket`; the returned function stops, and cuts what it copied into exchanges. */
function tapSocket(
  socket: net.Socket,
  label: () => string,
  onServer: (origin: string) => void,
): () => TappedExchange[] {
  const written: Buffer[] = [];
  const labels: { offset: number; label: string }[] = [];
  let writtenLength = 0;
  const received: Buffer[] = [];
  let receivedLength = 0;
  /** Undecided until the peer's first five bytes: `HTTP/` or not. */
  let http: boolean | undefined;
  let ended = false;
  let finished = false;
  /** Taken while the socket is open: a closed one has no address. */
  let origin = '';

  watch(socket, {
    sent(chunk, encoding) {
      if (http === false || finished) return;
      const bytes =
        typeof chunk === 'string'
          ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
          : chunk instanceof Uint8Array
            ? Buffer.from(chunk)
            : undefined;
      if (!bytes || bytes.length === 0) return;
      labels.push({ offset: writtenLength, label: label() });
      written.push(bytes);
      writtenLength += bytes.length;
    },
    received(chunk) {
      if (chunk === null) ended = true;
      if (http === false || finished || !(chunk instanceof Uint8Array)) return;
      received.push(Buffer.from(chunk));
      receivedLength += chunk.length;
      if (http === undefined && receivedLength >= 5) {
        http = Buffer.concat(received).subarray(0, 5).toString('latin1') === 'HTTP/';
        const host = socket.remoteFamily === 'IPv6' ? `[${socket.remoteAddress}]` : socket.remoteAddress;
        origin = `http://${host}:${socket.remotePort}`;
        if (http) onServer(origin);
        else received.length = written.length = labels.length = 0;
      }
    },
  });

  return () => {
    finished = true;
    if (!http) return [];
    // The requests come in the order they were written: the label of the write each starts in.
    let write = 0;
    const requests = parseRequests(Buffer.concat(written), (offset) => {
      while (write + 1 < labels.length && labels[write + 1].offset <= offset) write++;
      return labels[write]?.label ?? '';
    });
    return parseAnswers(Buffer.concat(received), requests, ended).map((answer, i) => {
      const { label: requestLabel, ...request } = requests[i] ?? { method: '', target: '', headers: {}, label: '' };
      return { origin, label: requestLabel, request, ...answer };
    });
  };
}

interface WireRequest {
  method: string;
  target: string;
  headers: Record<string, string>;
  label: string;
}

interface Head {
  /** The lines of the head, up to the blank line (or, when it has not come, the whole lines so far). */
  lines: string[];
  /** Where what follows the head starts; undefined while the head is incomplete. */
  end: number | undefined;
}

/** The head of a message starting at `start` (lines ended by CRLF, or a bare LF as parsers allow). */
function readHead(bytes: Buffer, start: number): Head {
  const crlf = bytes.indexOf('\r\n\r\n', start);
  const lf = bytes.indexOf('\n\n', start);
  const candidates = [crlf < 0 ? Infinity : crlf + 4, lf < 0 ? Infinity : lf + 2];
  const end = Math.min(...candidates);
  if (end === Infinity) {
    const text = bytes.subarray(start).toString('latin1');
    return { lines: text.split(/\r?\n/).slice(0, -1), end: undefined };
  }
  return { lines: bytes.subarray(start, end).toString('latin1').trimEnd().split(/\r?\n/), end };
}

/** Header lines as one record: lowercase names, a field on several lines joined by commas. */
function fieldsOf(lines: string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  let last: string | undefined;
  for (const line of lines) {
    if (/^[ \t]/.test(line) && last !== undefined) {
      fields[last] += ` ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    last = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    fields[last] = last in fields ? `${fields[last]}, ${value}` : value;
  }
  return fields;
}

/** Where a chunked body starting at `start` ends, and its data; `end` undefined while incomplete. */
function readChunked(bytes: Buffer, start: number): { data: Buffer; end: number | undefined } {
  const parts: Buffer[] = [];
  let at = start;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at);
    if (lineEnd < 0) return { data: Buffer.concat(parts), end: undefined };
    const size = parseInt(bytes.subarray(at, lineEnd).toString('latin1').split(';')[0], 16);
    if (Number.isNaN(size)) return { data: Buffer.concat(parts), end: undefined };
    if (size === 0) {
      // The last chunk, its trailer fields if any, and the blank line.
      const end = bytes.indexOf('\r\n\r\n', lineEnd);
      return { data: Buffer.concat(parts), end: end < 0 ? undefined : end + 4 };
    }
    const dataEnd = Math.min(lineEnd + 2 + size, bytes.length);
    parts.push(bytes.subarray(lineEnd + 2, dataEnd));
    if (bytes.length < lineEnd + 2 + size + 2) return { data: Buffer.concat(parts), end: undefined };
    at = lineEnd + 2 + size + 2;
  }
}

/**
 * The requests in what a client wrote, in order. Reading stops at what is no request line, and
 * after a request whose body's end cannot be known (its framing broken, or not all sent): the
 * server has read it its own way and, for the tests that send such, closes the connection.
 */
function parseRequests(bytes: Buffer, labelAt: (offset: number) => string): WireRequest[] {
  const requests: WireRequest[] = [];
  let at = 0;
  while (at < bytes.length) {
    // Empty lines before a request line are skipped (RFC 9112 2.2).
    while (at < bytes.length && (bytes[at] === 0x0d || bytes[at] === 0x0a)) at++;
    if (at >= bytes.length) break;
    const head = readHead(bytes, at);
    const line = /^(\S+) (\S+) HTTP\/\d\.\d$/.exec(head.lines[0] ?? '');
    if (!line) {
      // What the server makes of it: no request of the document's.
      requests.push({ method: '', target: '', headers: {}, label: labelAt(at) });
      break;
    }
    const headers = fieldsOf(head.lines.slice(1));
    requests.push({ method: line[1], target: line[2], headers, label: labelAt(at) });
    if (head.end === undefined) break;
    const end = bodyEnd(bytes, head.end, headers);
    if (end === undefined) break;
    at = end;
  }
  return requests;
}

/** Where a request's body ends (RFC 9112 6.3); undefined when it cannot be known or has not all come. */
function bodyEnd(bytes: Buffer, start: number, headers: Record<string, string>): number | undefined {
  const transferEncoding = headers['transfer-encoding'];
  if (transferEncoding !== undefined) {
    return /(^|,)\s*chunked\s*$/i.test(transferEncoding) ? readChunked(bytes, start).end : undefined;
  }
  const length = headers['content-length'];
  if (length === undefined) return start;
  if (!/^\d+$/.test(length)) return undefined;
  const end = start + Number(length);
  return end <= bytes.length ? end : undefined;
}

type Answer = Pick<Exchange, 'status' | 'headers' | 'body' | 'complete'>;

/**
 * The answers in what a server sent, each to the request of its place (1xx interim answers
 * skipped). Reading stops at what is no status line, or at an answer not yet whole.
 */
function parseAnswers(bytes: Buffer, requests: WireRequest[], ended: boolean): Answer[] {
  const answers: Answer[] = [];
  let at = 0;
  while (at < bytes.length) {
    const head = readHead(bytes, at);
    const line = /^HTTP\/\d\.\d (\d{3})/.exec(head.lines[0] ?? '');
    if (!line || head.end === undefined) break;
    const status = Number(line[1]);
    at = head.end;
    if (status >= 100 && status < 200 && status !== 101) continue;
    const method = requests[answers.length]?.method;
    const headers = fieldsOf(head.lines.slice(1));
    const empty = Buffer.alloc(0);
    if (status === 101 || (method === 'CONNECT' && status < 300)) {
      answers.push({ status, headers, body: empty, complete: true });
      break;
    }
    if (method === 'HEAD' || status === 204 || status === 304) {
      answers.push({ status, headers, body: empty, complete: true });
      continue;
    }
    if (/(^|,)\s*chunked\s*$/i.test(headers['transfer-encoding'] ?? '')) {
      const { data, end } = readChunked(bytes, at);
      answers.push({ status, headers, body: data, complete: end !== undefined });
      if (end === undefined) break;
      at = end;
      continue;
    }
    const length = headers['content-length'];
    if (length !== undefined && /^\d+$/.test(length)) {
      const end = at + Number(length);
      answers.push({ status, headers, body: bytes.subarray(at, end), complete: end <= bytes.length });
      at = end;
      continue;
    }
    // No framing: the body runs to the end of the connection.
    answers.push({ status, headers, body: bytes.subarray(at), complete: ended });
    break;
  }
  return answers;
}

export interface Relay {
  /** Where the client is to send its requests. */
  baseUrl: string;
  close(): Promise<void>;
}

/**
 * A relay on 127.0.0.1 to the server at `baseUrl`, for a client outside this process (curl in a
 * shell): its exchanges pass through a socket of this process, so the tap sees them.
 */
export async function relayTo(baseUrl: string): Promise<Relay> {
  const target = new URL(baseUrl);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    }
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
