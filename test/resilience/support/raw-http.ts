import net from 'node:net';
import { PATIENCE_MS } from '../../support/wait';

/**
 * HTTP/1.1 over a plain TCP socket, so that what a test sends reaches the server byte for byte:
 * odd methods, unencoded or overlong targets, bad header values, any framing. node:http and fetch
 * refuse or rewrite most of these before they leave the client.
 */

export interface RawRequest {
  method: string;
  /** The request target, written as given. */
  target: string;
  headers?: Array<[string, string]>;
  body?: Buffer;
  /** How the body is framed: a Content-Length (default), chunked, or not at all. */
  framing?: 'length' | 'chunked' | 'none';
}

export interface RawResponse {
  status: number;
  /** Header names in lower case; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
  /** The server ended the connection after this response. */
  closed: boolean;
}

class DroppedConnection extends Error {}

function encodeRequest(request: RawRequest): Buffer {
  const framing = request.framing ?? 'length';
  const lines = [`${request.method} ${request.target} HTTP/1.1`];
  for (const [name, value] of request.headers ?? []) lines.push(`${name}: ${value}`);
  const body = request.body ?? Buffer.alloc(0);
  if (framing === 'length' && request.body !== undefined) lines.push(`Content-Length: ${body.length}`);
  if (framing === 'chunked') lines.push('Transfer-Encoding: chunked');
  const head = Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1');
  if (framing !== 'chunked') return Buffer.concat([head, body]);
  const chunks: Buffer[] = [head];
  for (let offset = 0; offset < body.length; offset += 16 * 1024) {
    const chunk = body.subarray(offset, offset + 16 * 1024);
    chunks.push(Buffer.from(`${chunk.length.toString(16)}\r\n`, 'latin1'), chunk, Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(chunks);
}

type Parsed = { response: Omit<RawResponse, 'closed'>; rest: Buffer } | 'incomplete';

/** Parses one response from the front of `data`; `ended` says the server closed the connection. */
function parseResponse(data: Buffer, isHead: boolean, ended: boolean): Parsed {
  let start = 0;
  for (;;) {
    const headEnd = data.indexOf('\r\n\r\n', start);
    if (headEnd < 0) return 'incomplete';
    const lines = data.subarray(start, headEnd).toString('latin1').split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
    if (!match) throw new Error(`not an HTTP response: ${JSON.stringify(lines[0].slice(0, 80))}`);
    const status = Number(match[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
    }
    const bodyStart = headEnd + 4;
    // 1xx responses (100 Continue) come before the real one.
    if (status >= 100 && status < 200) {
      start = bodyStart;
      continue;
    }
    if (isHead || status === 204 || status === 304) {
      return { response: { status, headers, body: Buffer.alloc(0) }, rest: data.subarray(bodyStart) };
    }
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const parts: Buffer[] = [];
      let at = bodyStart;
      for (;;) {
        const lineEnd = data.indexOf('\r\n', at);
        if (lineEnd < 0) return 'incomplete';
        const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
        if (Number.isNaN(size)) throw new Error('bad chunk size');
        if (size === 0) {
          // Trailers, then an empty line.
          const end = data.indexOf('\r\n\r\n', lineEnd);
          if (end < 0) return 'incomplete';
          return { response: { status, headers, body: Buffer.concat(parts) }, rest: data.subarray(end + 4) };
        }
        if (data.length < lineEnd + 2 + size + 2) return 'incomplete';
        parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
      }
    }
    if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      if (data.length < bodyStart + length) return 'incomplete';
      return {
        response: { status, headers, body: data.subarray(bodyStart, bodyStart + length) },
        rest: data.subarray(bodyStart + length),
      };
    }
    // No framing: the body runs to the end of the connection.
    if (!ended) return 'incomplete';
    return { response: { status, headers, body: data.subarray(bodyStart) }, rest: Buffer.alloc(0) };
  }
}

/**
 * One keep-alive connection, one request at a time. A request that does not get a whole
 * response (the connection closed or failed first, or nothing came within `timeoutMs`) rejects
 * with DroppedConnection.
 */
export class RawConnection {
  private socket: net.Socket | undefined;
  private buffer = Buffer.alloc(0);
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly port: number,
    private readonly timeoutMs = PATIENCE_MS,
  ) {}

  private async connect(): Promise<net.Socket> {
    this.buffer = Buffer.alloc(0);
    this.ended = false;
    this.failure = undefined;
    const socket = net.connect(this.port, '127.0.0.1');
    this.socket = socket;
    // Events of a socket already given up on must not touch the state of its successor.
    const current = () => this.socket === socket;
    socket.on('data', (chunk) => {
      if (!current()) return;
      this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
      this.wake?.();
    });
    const end = () => {
      if (!current()) return;
      this.ended = true;
      this.wake?.();
    };
    socket.on('end', end);
    socket.on('close', end);
    socket.on('error', (err) => {
      if (!current()) return;
      this.failure = err;
      this.wake?.();
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return socket;
  }

  async send(
    request: RawRequest | Buffer,
    isHead = !Buffer.isBuffer(request) && request.method === 'HEAD',
  ): Promise<RawResponse> {
    const socket = this.socket && !this.ended && !this.failure ? this.socket : await this.connect();
    const bytes = Buffer.isBuffer(request) ? request : encodeRequest(request);
    // The server may answer (413) and close before it has read everything: a write error then
    // is not a failure as long as the response arrived whole.
    socket.write(bytes, () => undefined);
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      let parsed: Parsed;
      try {
        parsed = parseResponse(this.buffer, isHead, this.ended);
      } catch (err) {
        this.close();
        throw new DroppedConnection(`unparseable response: ${(err as Error).message}`);
      }
      if (parsed !== 'incomplete') {
        this.buffer = Buffer.from(parsed.rest);
        const closes = /close/i.test(parsed.response.headers.connection ?? '');
        if (closes) this.close();
        return { ...parsed.response, closed: closes || this.ended };
      }
      if (this.ended || this.failure) {
        const why = this.failure
          ? `failed (${(this.failure as NodeJS.ErrnoException).code ?? this.failure.message})`
          : 'was closed';
        this.close();
        throw new DroppedConnection(`the connection ${why} before a whole response came (${this.buffer.length} bytes)`);
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        this.close();
        throw new DroppedConnection(`no whole response within ${this.timeoutMs} ms (${this.buffer.length} bytes)`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  close(): void {
    this.socket?.destroy();
    this.socket = undefined;
  }
}
