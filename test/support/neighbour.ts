import { type ChildProcessByStdio, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { tempDataDir } from './temp-dir';
import { waitFor } from './wait';

/** The uid and gid of `nobody`, the other local user of these tests. */
export const NOBODY = 65534;

let nodeForNobody: string | undefined;
// Each test file has a copy of this module of its own (Jest's registry), so the link goes with the
// file. (A handler of process's 'exit' never ran: Jest gives a test file a process object of its own.)
afterAll(() => {
  if (nodeForNobody) fs.rmSync(path.dirname(nodeForNobody), { recursive: true, force: true });
  nodeForNobody = undefined;
});

/**
 * A node binary `nobody` can run: this process's own, linked (or, across file systems, copied)
 * into a directory anyone may enter. Root's own may sit in a private directory (CI's Node.js
 * unpacked in a `mktemp -d`, nvm under /root) that `nobody` cannot reach.
 */
function nodeNobodyCanRun(): string {
  if (nodeForNobody) return nodeForNobody;
  const target = path.join(tempDataDir('node-for-nobody'), 'node');
  try {
    fs.linkSync(process.execPath, target);
  } catch {
    fs.copyFileSync(process.execPath, target);
  }
  fs.chmodSync(target, 0o755);
  nodeForNobody = target;
  return target;
}

/** What a neighbour that floods sends on each connection at most: 400 MB. */
export const FLOOD_BYTES = 400 * 2 ** 20;

/**
 * What another local user could run: a server on 127.0.0.1:<port> that answers every startup
 * message as `answers` says (see ANSWERS) and reports each connection and each byte it hears.
 * Run as `nobody`; it takes the port as soon as the port is free.
 */
const SCRIPT = `
const net = require('node:net');
const [port, answers] = process.argv.slice(1);
const message = (type, body) => {
  const head = Buffer.alloc(5);
  head.write(type);
  head.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([head, body]);
};
const authentication = (code, rest = '') => {
  const body = Buffer.alloc(4 + rest.length);
  body.writeInt32BE(code);
  body.write(rest, 4, 'latin1');
  return message('R', body);
};
const answer = {
  cleartext: authentication(3),
  scram: authentication(10, 'SCRAM-SHA-256\\0\\0'),
  gss: authentication(7),
  sspi: authentication(9),
  'sasl-unknown': authentication(10, 'X-UNKNOWN\\0\\0'),
  // An authentication request with no code: pg reads past the end of what it was given.
  garbage: Buffer.from([0x52, 0, 0, 0, 4]),
  error: message('E', Buffer.from('SFATAL\\0C28000\\0Mgo away\\0\\0', 'latin1')),
  ready: message('Z', Buffer.from('I')),
}[answers];
// A request to authenticate that announces 2 GB, then sends on (FLOOD_BYTES at most): a parser
// that buffers what a message announces keeps all of it.
const flood = (socket) => {
  const head = Buffer.alloc(5);
  head.write('R');
  head.writeUInt32BE(0x7ffffff0, 1);
  socket.write(head);
  const chunk = Buffer.alloc(1 << 16);
  let sent = 0;
  const more = () => {
    while (!socket.destroyed && sent < ${FLOOD_BYTES}) {
      sent += chunk.length;
      if (!socket.write(chunk)) return socket.once('drain', more);
    }
  };
  more();
};
let connections = 0;
const server = net.createServer((socket) => {
  const id = connections++;
  let asked = false;
  process.stdout.write(id + ' \\n');
  socket.on('error', () => undefined);
  if (answers === 'close') socket.destroy();
  socket.on('data', (chunk) => {
    process.stdout.write(id + ' ' + chunk.toString('hex') + '\\n');
    if (!asked && answer) socket.write(answer);
    if (!asked && answers === 'flood') flood(socket);
    asked = true;
  });
});
const listen = () => server.listen(Number(port), '127.0.0.1', () => process.stdout.write('listening\\n'));
server.on('error', () => setTimeout(listen, 50));
listen();
`;

/**
 * How a neighbour answers the startup message: asking for the password in clear, or for
 * SCRAM-SHA-256, as a server would; asking for what pg does not know (GSSAPI, 7; SSPI, 9; a SASL
 * mechanism other than SCRAM-SHA-256), or for nothing it can read; an error; "ready" without
 * asking to authenticate at all; closing the connection at once; never answering; or a request to
 * authenticate that announces 2 GB, and as much as it can send of them (`flood`).
 */
export const ANSWERS = [
  'cleartext',
  'scram',
  'gss',
  'sspi',
  'sasl-unknown',
  'garbage',
  'error',
  'ready',
  'close',
  'silent',
  'flood',
] as const;
export type Answers = (typeof ANSWERS)[number];

export interface Neighbour {
  /** Stops it; what each connection sent it, in order. */
  stop(): Promise<Buffer[]>;
}

/** `script` run by node as `nobody`, with `args` (process.argv.slice(1)); its stdout piped. */
export function spawnAsNobody(script: string, args: string[]): ChildProcessByStdio<null, Readable, null> {
  return spawn(nodeNobodyCanRun(), ['-e', script, ...args], {
    uid: NOBODY,
    gid: NOBODY,
    cwd: '/',
    env: {},
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

export async function neighbourListeningOn(port: number, answers: Answers): Promise<Neighbour> {
  const child = spawnAsNobody(SCRIPT, [String(port), answers]);
  const heard = new Map<string, Buffer>();
  let listening = false;
  let rest = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const lines = (rest + chunk.toString()).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      if (line === 'listening') listening = true;
      else {
        const [id, hex] = line.split(' ');
        heard.set(id, Buffer.concat([heard.get(id) ?? Buffer.alloc(0), Buffer.from(hex, 'hex')]));
      }
    }
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await waitFor(`a neighbour listening on port ${port}`, () => (listening ? true : undefined));
  return {
    async stop() {
      child.kill('SIGKILL');
      await exited;
      return [...heard.values()];
    },
  };
}

/**
 * Whether `bytes` is at most one startup message (protocol 3.0): all a client says before it
 * authenticates. Nothing at all, for a connection the neighbour closed before it read.
 */
export function isAtMostTheStartupMessage(bytes: Buffer): boolean {
  if (bytes.length === 0) return true;
  return bytes.length >= 8 && bytes.readInt32BE(0) === bytes.length && bytes.readInt32BE(4) === 196608;
}
