import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDataDir } from './temp-dir';
import { waitFor } from './wait';

/** The uid and gid of `nobody`, the other local user of these tests. */
export const NOBODY = 65534;

let nodeForNobody: string | undefined;

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
  process.once('exit', () => fs.rmSync(path.dirname(target), { recursive: true, force: true }));
  nodeForNobody = target;
  return target;
}

/**
 * What another local user could run: a server on 127.0.0.1:<port> that answers every startup
 * message with an authentication request (the password in clear, or SCRAM-SHA-256) and reports
 * each byte it hears. Run as `nobody`; it takes the port as soon as the port is free.
 */
const SCRIPT = `
const net = require('node:net');
const [port, asks] = process.argv.slice(1);
const message = (code, body) => {
  const head = Buffer.alloc(9);
  head.write('R');
  head.writeInt32BE(8 + body.length, 1);
  head.writeInt32BE(code, 5);
  return Buffer.concat([head, body]);
};
const request = asks === 'cleartext' ? message(3, Buffer.alloc(0)) : message(10, Buffer.from('SCRAM-SHA-256\\0\\0'));
let connections = 0;
const server = net.createServer((socket) => {
  const id = connections++;
  let asked = false;
  socket.on('error', () => undefined);
  socket.on('data', (chunk) => {
    process.stdout.write(id + ' ' + chunk.toString('hex') + '\\n');
    if (!asked) socket.write(request);
    asked = true;
  });
});
const listen = () => server.listen(Number(port), '127.0.0.1', () => process.stdout.write('listening\\n'));
server.on('error', () => setTimeout(listen, 50));
listen();
`;

export interface Neighbour {
  /** Stops it; what each connection sent it, in order. */
  stop(): Promise<Buffer[]>;
}

export async function neighbourListeningOn(port: number, asks: 'cleartext' | 'scram'): Promise<Neighbour> {
  const child = spawn(nodeNobodyCanRun(), ['-e', SCRIPT, String(port), asks], {
    uid: NOBODY,
    gid: NOBODY,
    cwd: '/',
    env: {},
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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

/** Whether `bytes` is one startup message (protocol 3.0) and nothing else: all a client says before it authenticates. */
export function isStartupMessageOnly(bytes: Buffer): boolean {
  return bytes.length >= 8 && bytes.readInt32BE(0) === bytes.length && bytes.readInt32BE(4) === 196608;
}
