import http from 'node:http';
import net from 'node:net';
import type { Bike } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import { startTestService, type TestService } from '../support/service';
import { PATIENCE_MS } from '../support/wait';

/**
 * Body and time limits (docs/reference/requests-and-answers.md#bodies): bodies over 1 MB get 413 without being read whole, and
 * the client's next request still succeeds; a client too slow with its headers or its body is
 * cut off.
 */

const MB = 1024 * 1024;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A request through `agent`, with the body written in 64 KB pieces (as a real upload would). */
function send(
  agent: http.Agent,
  port: number,
  method: string,
  path: string,
  headers: http.OutgoingHttpHeaders,
  body?: Buffer,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      res.on('error', reject);
    });
    // The server may answer and close before the upload ends: only a missing answer is an error.
    req.on('error', (err) => setTimeout(() => reject(err), 500));
    if (!body) return void req.end();
    let offset = 0;
    const write = () => {
      while (offset < body.length) {
        const piece = body.subarray(offset, offset + 64 * 1024);
        offset += piece.length;
        if (!req.write(piece)) return void req.once('drain', write);
      }
      req.end();
    };
    write();
  });
}

/** A JSON bike whose serialized size is exactly `size` bytes (the description pads it). */
function bikeOfSize(size: number): Buffer {
  const base = JSON.stringify(newBike({ description: '' }));
  const fields = newBike({ description: 'x'.repeat(size - Buffer.byteLength(base)) });
  const bytes = Buffer.from(JSON.stringify(fields));
  expect(bytes.length).toBe(size);
  return bytes;
}

/** Writes a request head (and maybe part of a body) on a raw socket, and waits for the answer, never finishing the body. */
function answerBeforeBodyEnds(
  port: number,
  head: string,
  bodyPart: Buffer,
): Promise<{ response: string; sentBytes: number }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(head);
      socket.write(bodyPart);
    });
    let response = '';
    socket.on('data', (chunk) => {
      response += chunk.toString('latin1');
      if (response.includes('\r\n\r\n')) {
        socket.destroy();
        resolve({ response, sentBytes: bodyPart.length });
      }
    });
    socket.on('error', reject);
    // The body never ends: without an answer this would wait for ever.
    const patience = setTimeout(
      () => reject(new Error(`no answer while the body was still unfinished: ${JSON.stringify(response)}`)),
      PATIENCE_MS,
    );
    socket.on('close', () => {
      clearTimeout(patience);
      reject(new Error(`closed with no answer while the body was still unfinished: ${JSON.stringify(response)}`));
    });
  });
}

describe('request limits', () => {
  let svc: TestService;
  let token: string;
  let existing: Bike;

  beforeAll(async () => {
    svc = await startTestService();
    token = await svc.token();
    existing = await client(svc.baseUrl, token).create();
  });
  afterAll(() => svc?.stop());

  describe('bodies over 1 MB', () => {
    it('a body of exactly 1 MB is accepted, one byte more is 413', async () => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const fits = await send(agent, svc.service.port, 'POST', '/bikes/', headers, bikeOfSize(MB));
      expect(fits.status).toBe(200);
      expect((JSON.parse(fits.body) as Bike).description).toHaveLength(
        MB - Buffer.byteLength(JSON.stringify(newBike({ description: '' }))),
      );
      const over = await send(agent, svc.service.port, 'POST', '/bikes/', headers, bikeOfSize(MB + 1));
      expect(over.status).toBe(413);
      agent.destroy();
    });

    it('with a Content-Length over 1 MB, answers 413 before the body has even arrived', async () => {
      const head = `POST /bikes/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${50 * MB}\r\n\r\n`;
      const { response } = await answerBeforeBodyEnds(svc.service.port, head, Buffer.from('{"title":"'));
      expect(response).toMatch(/^HTTP\/1\.1 413 /);
      expect(response).toMatch(/\r\nConnection: close\r\n/i);
    });

    it('chunked, answers 413 once 1 MB is exceeded, without waiting for the end of the body', async () => {
      const head = `POST /bikes/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
      const piece = Buffer.alloc(64 * 1024, 'a');
      const chunk = Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]);
      // 1.25 MB of chunks and no terminating chunk: the body never ends.
      const chunks = Buffer.concat([Buffer.from('6\r\n{"a":"\r\n'), ...Array.from({ length: 20 }, () => chunk)]);
      const { response } = await answerBeforeBodyEnds(svc.service.port, head, chunks);
      expect(response).toMatch(/^HTTP\/1\.1 413 /);
      expect(response).toMatch(/\r\nConnection: close\r\n/i);
    });

    it('of any content type, is 413 by its Content-Length', async () => {
      const head = `PATCH /bikes/${existing.id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: text/plain\r\nContent-Length: ${2 * MB}\r\n\r\n`;
      const { response } = await answerBeforeBodyEnds(svc.service.port, head, Buffer.alloc(1000, 'a'));
      expect(response).toMatch(/^HTTP\/1\.1 413 /);
    });

    for (const framing of ['Content-Length', 'chunked'] as const) {
      it(`sent whole (${framing}) on a pooled keep-alive connection, answers 413 and the next request on the pool succeeds`, async () => {
        // One socket in the pool: the next request must get a working connection after the 413.
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        const body = Buffer.from(JSON.stringify(newBike({ description: 'x'.repeat(5 * MB) })));
        const headers: http.OutgoingHttpHeaders = {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
        };
        if (framing === 'chunked') headers['transfer-encoding'] = 'chunked';
        else headers['content-length'] = body.length;
        for (const [method, path] of [
          ['POST', '/bikes/'],
          ['PUT', `/bikes/${existing.id}`],
          ['PATCH', `/bikes/${existing.id}`],
          ['POST', '/api/user'],
        ]) {
          const refused = await send(agent, svc.service.port, method, path, headers, body);
          expect({ method, status: refused.status, connection: refused.headers.connection }).toEqual({
            method,
            status: 413,
            connection: 'close',
          });
          const next = await send(agent, svc.service.port, 'GET', `/bikes/${existing.id}`, {});
          expect(next.status).toBe(200);
          expect(JSON.parse(next.body)).toEqual(existing);
        }
        agent.destroy();
        // Nothing of the refused bodies was stored.
        expect(await (await fetch(`${svc.baseUrl}/bikes/all`)).json()).toEqual(
          expect.not.arrayContaining([expect.objectContaining({ description: 'x'.repeat(5 * MB) })]),
        );
      });
    }
  });

  describe('slow clients', () => {
    /** Opens a connection, sends `head`, then one byte every second from `drip`; resolves when the server closes it. */
    function slowClient(head: string, drip: string): Promise<{ heldMs: number; response: string }> {
      return new Promise((resolve) => {
        const started = performance.now();
        let response = '';
        let timer: NodeJS.Timeout | undefined;
        const socket = net.connect(svc.service.port, '127.0.0.1', () => {
          socket.write(head);
          let i = 0;
          timer = setInterval(() => socket.writable && socket.write(drip[i++ % drip.length]), 1_000);
        });
        socket.on('data', (chunk) => (response += chunk.toString('latin1')));
        socket.on('error', () => undefined);
        socket.on('close', () => {
          clearInterval(timer);
          resolve({ heldMs: performance.now() - started, response });
        });
      });
    }

    it('a client that never finishes its headers (slowloris) is answered 408 and cut off after 10 s; one that never finishes its body, after 30 s', async () => {
      const [headers, body] = await Promise.all([
        slowClient('GET /bikes/all HTTP/1.1\r\nHost: x\r\nX-Slow: ', 'abcdefgh'),
        slowClient(
          'POST /api/user HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"username":"',
          'abcdefgh',
        ),
      ]);
      // Never before its limit; how long after depends on the machine, but the two limits are
      // told apart: the client slow with its headers, sent at the same time, is cut off first.
      expect(headers.response).toMatch(/^HTTP\/1\.1 408 /);
      expect(headers.heldMs).toBeGreaterThan(9_500);
      expect(body.response).toMatch(/^HTTP\/1\.1 408 /);
      expect(body.heldMs).toBeGreaterThan(29_500);
      expect(headers.heldMs).toBeLessThan(body.heldMs);
      console.log(
        `limits: a header slowloris was cut after ${headers.heldMs.toFixed(0)} ms, a body slowloris after ${body.heldMs.toFixed(0)} ms`,
      );
    });
  });
});
