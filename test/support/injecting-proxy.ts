import net from 'node:net';

/**
 * A TCP proxy between the service and PostgreSQL that, once armed, slips stray messages into what
 * the server sends, as a broken pooler or a meddling network would: after some creates' answer
 * (a bike's row, "INSERT 0 1"), a ReadyForQuery of its own, the server's own ReadyForQuery held
 * back until the client has sent its next query (so that, to a client that trusts the order, the
 * next query is answered by the ReadyForQuery meant for the create, and every answer after it
 * shifts by one: issue 37); before other creates' row, the row of an earlier create (another
 * request's bike).
 */
export interface InjectingProxy {
  /** A connection string like `url`, through the proxy. */
  url: string;
  /** Starts (or stops) slipping messages in. */
  arm(armed: boolean): void;
  /** What it slipped in so far, of each kind. */
  injected(): { ready: number; row: number };
  /** Connections it slipped something into that are still open (their client has not closed them). */
  injectedOpen(): number;
  close(): Promise<void>;
}

/** A backend message: its type and its whole bytes. */
interface Message {
  type: string;
  bytes: Buffer;
}

const READY_FOR_QUERY = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]); // 'Z', length 5, idle

/** Every how many creates' answers a ReadyForQuery, or another create's row, is slipped in. */
const EVERY = 7;

export async function injectingProxy(url: string): Promise<InjectingProxy> {
  const target = new URL(url);
  let armed = false;
  const counts = { ready: 0, row: 0 };
  let creates = 0;
  /** The row of an earlier create, with the description of its columns. */
  let stale: { description: Buffer; row: Buffer } | undefined;
  const sockets = new Set<net.Socket>();
  const injectedOpen = new Set<net.Socket>();

  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let buffered = Buffer.alloc(0);
    let description: Buffer | undefined;
    /** A result's rows, held until its CommandComplete says what it was. */
    let rows: Buffer[] = [];
    /** What the server sent after a ReadyForQuery of ours: held until the client speaks again. */
    let holding: Buffer[] | undefined;
    const send = (bytes: Buffer): void => {
      if (holding) holding.push(bytes);
      else client.write(bytes);
    };

    const isCreate = (message: Message) =>
      message.type === 'C' &&
      message.bytes.toString('latin1', 5, message.bytes.length - 1) === 'INSERT 0 1' &&
      rows.length === 1 &&
      description?.includes('handle\0') === true;

    const relay = (message: Message): void => {
      if (message.type === 'T') description = message.bytes;
      if (message.type === 'D') {
        rows.push(message.bytes);
        return;
      }
      if (message.type !== 'C') return send(message.bytes);
      const result = [...rows, message.bytes];
      const create = isCreate(message);
      const row = rows[0];
      rows = [];
      if (!create || !description) return send(Buffer.concat(result));
      const turn = armed ? ++creates % EVERY : undefined;
      if (turn === 0 && stale && stale.description.equals(description)) {
        counts.row++;
        injectedOpen.add(client);
        send(Buffer.concat([stale.row, ...result]));
      } else if (turn === 3) {
        counts.ready++;
        injectedOpen.add(client);
        send(Buffer.concat([...result, READY_FOR_QUERY]));
        holding ??= [];
      } else {
        send(Buffer.concat(result));
      }
      stale = { description, row };
    };

    upstream.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 5) {
        const length = buffered.readUInt32BE(1) + 1;
        if (buffered.length < length) break;
        relay({ type: String.fromCharCode(buffered[0]), bytes: buffered.subarray(0, length) });
        buffered = buffered.subarray(length);
      }
    });
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      if (!holding) return;
      const held = holding;
      holding = undefined;
      for (const bytes of held) client.write(bytes);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', () => injectedOpen.delete(client));
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String((server.address() as net.AddressInfo).port);
  return {
    url: proxied.toString(),
    arm: (value) => (armed = value),
    injected: () => ({ ...counts }),
    injectedOpen: () => injectedOpen.size,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
