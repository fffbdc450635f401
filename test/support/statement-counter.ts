import net from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL that reads what clients send (the protocol's messages: a
 * type byte and a length) and keeps the text of every statement they parse or send simply, so a
 * test can count the statements a request cost, as pg_stat_statements would.
 */
export interface StatementCounter {
  /** A connection string like `url`, through the proxy. */
  url: string;
  /** Every statement's text sent since `reset`, in order. */
  statements(): string[];
  reset(): void;
  close(): Promise<void>;
}

export async function countStatements(url: string): Promise<StatementCounter> {
  const target = new URL(url);
  let seen: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let buffered = Buffer.alloc(0);
    let started = false;
    client.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        // The startup message (and an SSL request) has no type byte: its length comes first.
        const header = started ? 5 : 4;
        if (buffered.length < header) break;
        const length = started ? buffered.readInt32BE(1) + 1 : buffered.readInt32BE(0);
        if (buffered.length < length) break;
        const message = buffered.subarray(0, length);
        buffered = buffered.subarray(length);
        if (!started) {
          // 80877103: SSLRequest, answered 'N' by the server; the startup message follows.
          started = message.readInt32BE(4) !== 80877103;
          continue;
        }
        const type = String.fromCharCode(message[0]);
        // Parse: name, then the text; Query: the text.
        if (type === 'P')
          seen.push(message.toString('utf8', message.indexOf(0, 5) + 1, message.indexOf(0, message.indexOf(0, 5) + 1)));
        if (type === 'Q') seen.push(message.toString('utf8', 5, length - 1));
      }
      upstream.write(chunk);
    });
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String((server.address() as net.AddressInfo).port);
  return {
    url: proxied.toString(),
    statements: () => [...seen],
    reset: () => (seen = []),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
