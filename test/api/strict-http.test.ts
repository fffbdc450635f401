import { RawConnection } from '../resilience/support/raw-http';
import { useApi } from './helpers';

/**
 * HTTP/1.1's own rules at the edge, sent as raw bytes: what node's parser lets through that the
 * RFCs refuse.
 */
describe('strict HTTP/1.1', () => {
  const api = useApi();
  const port = () => Number(new URL(api.baseUrl).port);

  describe('Host (docs/decisions.md#one-host)', () => {
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
