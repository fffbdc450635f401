import net from 'node:net';
import { RawConnection } from '../resilience/support/raw-http';
import { startTestService, type TestService } from '../support/service';
import { inOneWindow, PATIENCE_MS } from '../support/wait';
import { newBike, signToken, unknownId, useApi } from './helpers';

/**
 * An `Expect: 100-continue` exchange over a raw socket: the request head, then, only once the
 * server has answered `100 Continue`, the body. The status lines in the order they came, up to
 * the first final one.
 */
function expectContinue(port: number, head: string, body: Buffer): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(head));
    let received = '';
    let bodySent = false;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no final answer within ${PATIENCE_MS} ms: ${JSON.stringify(received)}`));
    }, PATIENCE_MS);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const statuses = [...received.matchAll(/^HTTP\/1\.1 (\d{3})[^\r]*\r\n(?:[^\r]+\r\n)*\r\n/gm)].map(
        ([, status]) => status,
      );
      if (statuses.includes('100') && !bodySent) {
        bodySent = true;
        socket.write(body);
      }
      if (statuses.some((status) => !status.startsWith('1'))) {
        clearTimeout(timer);
        socket.destroy();
        resolve(statuses);
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** A request head with Expect: 100-continue and the body's length. */
function headOf(method: string, path: string, headers: string[], bodyLength: number): string {
  return [
    `${method} ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Content-Type: application/json',
    `Content-Length: ${bodyLength}`,
    'Expect: 100-continue',
    ...headers,
    '',
    '',
  ].join('\r\n');
}

/**
 * HTTP/1.1's own rules at the edge, sent as raw bytes: what node's parser lets through that the
 * RFCs refuse.
 */
describe('strict HTTP/1.1', () => {
  const api = useApi();
  const port = () => Number(new URL(api.baseUrl).port);

  describe('Expect: 100-continue (docs/reference/http.md#100-continue)', () => {
    const body = () => Buffer.from(JSON.stringify(newBike()));
    const bearer = () => `Authorization: Bearer ${api.token}`;

    it('when the request has no token, its first status line is 401: no 100 Continue before it', async () => {
      const bytes = body();
      expect(await expectContinue(port(), headOf('POST', '/bikes/', [], bytes.length), bytes)).toEqual(['401']);
    });

    it('when the token fails verification, its first status line is 403', async () => {
      const bytes = body();
      const head = headOf('PUT', `/bikes/${unknownId()}`, ['Authorization: Bearer bad'], bytes.length);
      expect(await expectContinue(port(), head, bytes)).toEqual(['403']);
    });

    it('when the path id is not a UUID, its first status line is 404', async () => {
      const bytes = body();
      const head = headOf('PATCH', '/bikes/not-a-uuid', [bearer()], bytes.length);
      expect(await expectContinue(port(), head, bytes)).toEqual(['404']);
    });

    it('when Content-Length is over 1 MB, its first status line is 413', async () => {
      const head = headOf('POST', '/bikes/', [bearer()], 2 * 1024 * 1024);
      expect(await expectContinue(port(), head, Buffer.alloc(0))).toEqual(['413']);
    });

    it('when the body comes in a coding the service cannot decode, its first status line is 415', async () => {
      const bytes = body();
      const head = headOf('POST', '/bikes/', [bearer(), 'Content-Encoding: zstd'], bytes.length);
      expect(await expectContinue(port(), head, bytes)).toEqual(['415']);
    });

    it('when a precondition does not hold, it asks for the body, then answers 412, as without Expect (docs/reference/requests-and-answers.md#the-order-of-a-writes-answers)', async () => {
      const bike = await api.create();
      const bytes = Buffer.from(JSON.stringify({ ...newBike(), id: bike.id, handle: bike.handle }));
      const head = headOf('PUT', `/bikes/${bike.id}`, [bearer(), 'If-Match: "stale"'], bytes.length);
      expect(await expectContinue(port(), head, bytes)).toEqual(['100', '412']);
    });

    it.each([
      ['POST', '/bikes/'],
      ['POST', '/api/user'],
    ])(
      'when %s %s has a valid token and a small body, it answers 100 Continue, reads the body, then 200',
      async (method, path) => {
        const bytes = body();
        expect(await expectContinue(port(), headOf(method, path, [bearer()], bytes.length), bytes)).toEqual([
          '100',
          '200',
        ]);
      },
    );

    describe('over the write limit', () => {
      let limited: TestService;
      beforeAll(async () => {
        limited = await startTestService({ env: { RATE_LIMIT_WRITES: '1' } });
      });
      afterAll(() => limited.stop());

      it('when the client is over its write limit, its first status line is 429', async () => {
        await inOneWindow();
        const now = Math.floor(Date.now() / 1000);
        const token = signToken({ username: 'writer', iat: now, exp: now + 1800 }, limited.jwtSecret);
        const limitedPort = Number(new URL(limited.baseUrl).port);
        const bytes = body();
        const head = headOf('POST', '/bikes/', [`Authorization: Bearer ${token}`], bytes.length);
        expect(await expectContinue(limitedPort, head, bytes)).toEqual(['100', '200']);
        expect(await expectContinue(limitedPort, head, bytes)).toEqual(['429']);
      });
    });
  });

  describe('Host (docs/reference/http.md#one-host)', () => {
    it.each([
      [
        'two Host lines',
        [
          ['Host', 'a.example'],
          ['Host', 'b.example'],
        ],
      ],
      [
        'the same Host twice',
        [
          ['Host', 'a.example'],
          ['Host', 'a.example'],
        ],
      ],
      [
        'Host and host',
        [
          ['Host', 'a.example'],
          ['host', 'b.example'],
        ],
      ],
    ])('when a request has %s, it answers 400 and closes the connection', async (_label, hosts) => {
      const connection = new RawConnection(port());
      try {
        const res = await connection.send({
          method: 'GET',
          target: '/bikes/all',
          headers: hosts as [string, string][],
        });
        expect(res.status).toBe(400);
        expect(res.body.toString('latin1')).toBe('Bad Request');
        expect(res.closed).toBe(true);
      } finally {
        connection.close();
      }
    });

    it('when a request has one Host line, it answers as usual', async () => {
      const connection = new RawConnection(port());
      try {
        const res = await connection.send({ method: 'GET', target: '/bikes/all', headers: [['Host', 'a.example']] });
        expect(res.status).toBe(200);
      } finally {
        connection.close();
      }
    });
  });
});
