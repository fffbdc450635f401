import net from 'node:net';

/**
 * How a fake PostgreSQL on a loopback port answers a startup message: asking for the password in
 * clear, or for an MD5 hash of it; letting the client in without asking (AuthenticationOk, then
 * ReadyForQuery); or "ready" at once, without a word of authentication.
 */
export const FAKE_ANSWERS = ['cleartext', 'md5', 'ok', 'ready'] as const;
type FakeAnswers = (typeof FAKE_ANSWERS)[number];

const message = (type: string, body: Buffer) => {
  const head = Buffer.alloc(5);
  head.write(type, 'latin1');
  head.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([head, body]);
};
const authentication = (code: number, rest = Buffer.alloc(0)) => {
  const body = Buffer.alloc(4);
  body.writeInt32BE(code);
  return message('R', Buffer.concat([body, rest]));
};
const ready = message('Z', Buffer.from('I'));
const ANSWER: Record<FakeAnswers, Buffer> = {
  cleartext: authentication(3),
  md5: authentication(5, Buffer.from([1, 2, 3, 4])),
  ok: Buffer.concat([authentication(0), ready]),
  ready,
};

/**
 * A port on 127.0.0.1 where a PostgreSQL server answers, as DATABASE_URL names it; until `fake`
 * is called, when whoever took the port once the server left it answers instead (as a local user
 * could, during a restart): every connection from then on meets the fake, and reports all it
 * heard. `forward` gives the port back to the server.
 */
export interface LoopbackPort {
  /** `url` (a connection string of the server), at this port. */
  url: string;
  /** Closes every connection to the server, and answers new ones as `answers` says. */
  fake(answers: FakeAnswers): void;
  forward(): void;
  /** What each connection to the fake has sent it, since `fake` was called. */
  heard(): Buffer[];
  close(): Promise<void>;
}

export async function loopbackPort(url: string): Promise<LoopbackPort> {
  const target = new URL(url);
  let faking: FakeAnswers | undefined;
  let heard: Buffer[] = [];
  const forwarded = new Set<net.Socket>();
  const fakes = new Set<net.Socket>();
  const server = net.createServer((client) => {
    client.on('error', () => undefined);
    if (faking) {
      const answer = ANSWER[faking];
      const index = heard.push(Buffer.alloc(0)) - 1;
      let answered = false;
      fakes.add(client);
      client.on('close', () => fakes.delete(client));
      client.on('data', (chunk: Buffer) => {
        heard[index] = Buffer.concat([heard[index], chunk]);
        if (!answered) client.write(answer);
        answered = true;
      });
      return;
    }
    const upstream = net.connect(Number(target.port), target.hostname);
    forwarded.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      forwarded.delete(client);
      forwarded.delete(upstream);
    };
    client.on('close', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const at = new URL(url);
  at.hostname = '127.0.0.1';
  at.port = String((server.address() as net.AddressInfo).port);
  return {
    url: at.toString(),
    fake(answers) {
      faking = answers;
      heard = [];
      for (const socket of forwarded) socket.destroy();
    },
    forward: () => (faking = undefined),
    heard: () => [...heard],
    close: async () => {
      for (const socket of [...forwarded, ...fakes]) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
