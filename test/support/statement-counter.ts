import net from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL that reads what clients send (the protocol's messages: a
 * type byte and a length) and keeps the text of every statement they run, sent simply or bound
 * (a statement prepared by name is parsed once and bound each time it runs), so a test can count
 * the statements a request cost, as pg_stat_statements would; and every statement parsed, with
 * the name it was prepared under ('' unnamed).
 */
export interface StatementCounter {
  /** A connection string like `url`, through the proxy. */
  url: string;
  /** Every statement's text run since `reset`, in order. */
  statements(): string[];
  /** Every statement parsed since `reset`, with its name. */
  parsed(): { name: string; text: string }[];
  reset(): void;
  close(): Promise<void>;
}

export async function countStatements(url: string): Promise<StatementCounter> {
  const target = new URL(url);
  let seen: string[] = [];
  let parsed: { name: string; text: string }[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let buffered = Buffer.alloc(0);
    let started = false;
    /** This connection's statements by name, as parsed. */
    const prepared = new Map<string, string>();
    /** The C string at `at` in `message`, and where the next field starts. */
    const cString = (message: Buffer, at: number) => {
      const end = message.indexOf(0, at);
      return { value: message.toString('utf8', at, end), next: end + 1 };
    };
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
        if (type === 'P') {
          // Parse: the statement's name, then its text.
          const name = cString(message, 5);
          const text = cString(message, name.next).value;
          prepared.set(name.value, text);
          parsed.push({ name: name.value, text });
        }
        if (type === 'B') {
          // Bind: the portal's name, then the statement's.
          const name = cString(message, cString(message, 5).next).value;
          seen.push(prepared.get(name) ?? `(unknown statement ${name})`);
        }
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
    parsed: () => [...parsed],
    reset: () => {
      seen = [];
      parsed = [];
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
