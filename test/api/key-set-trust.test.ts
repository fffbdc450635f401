import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import type { Bike } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import { AUDIENCE, ISSUER, type ProviderKey, providerKey, startProvider } from '../support/identity-provider';
import { NOBODY, spawnAsNobody } from '../support/neighbour';
import { startTestService, type TestService } from '../support/service';
import { tempDataDir } from '../support/temp-dir';
import { waitFor } from '../support/wait';

/**
 * Whose key set the service trusts (docs/reference/callers.md#who-may-write): a loopback http:// key set
 * is proved by its listener's owner, as the embedded PostgreSQL is, so another local user who
 * takes the port while the provider is away serves keys no token is accepted with; a key set from
 * a file is read only where no one else can change it; and no key set is read beyond 1 MB.
 */

const CLOSED = { TOKEN_ISSUANCE: 'closed' };

/** What the service logged at warn and above, each line parsed. */
function logCapture() {
  const lines: Array<{ msg: string; err?: string }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: pino({ level: 'warn' }, stream) };
}

async function allBikes(svc: TestService): Promise<Bike[]> {
  return (await (await fetch(`${svc.baseUrl}/bikes/all`)).json()) as Bike[];
}

const createWith = async (svc: TestService, token: string) =>
  (await client(svc.baseUrl, token).request('POST', '/bikes/', { body: newBike() })).status;

/**
 * What another local user runs: an HTTP server on 127.0.0.1:<port>, taking the port as soon as it
 * is free, answering every request with the key set given, and reporting each request it hears.
 */
const SQUATTER = `
const http = require('node:http');
const [port, body] = process.argv.slice(1);
const server = http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' }).end(body);
});
const listen = () => server.listen(Number(port), '127.0.0.1', () => process.stdout.write('listening\\n'));
server.on('connection', () => process.stdout.write('connection\\n'));
server.on('error', () => setTimeout(listen, 50));
listen();
`;

async function squat(port: number, keys: ProviderKey[]) {
  const child = spawnAsNobody(SQUATTER, [String(port), JSON.stringify({ keys: keys.map((key) => key.jwk) })]);
  let listening = false;
  let connections = 0;
  child.stdout.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) {
      if (line === 'listening') listening = true;
      if (line === 'connection') connections++;
    }
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await waitFor(`a squatter listening on port ${port}`, () => (listening ? true : undefined));
  return {
    connections: () => connections,
    async stop() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

describe('an http:// key set on the loopback interface', () => {
  it('while the provider is away, another local user holding its port serves keys no token is accepted with: 503, nothing written; JWT_JWKS_OWNER names a user whose listener is trusted', async () => {
    const real = await providerKey('RS256');
    const provider = await startProvider([real]);
    const port = Number(new URL(provider.jwksUrl).port);
    const { lines, logger } = logCapture();
    const svc = await startTestService({ env: { ...CLOSED, ...provider.env }, logger });
    const trusting = await startTestService({
      databaseUrl: svc.databaseUrl,
      jwtSecret: svc.jwtSecret,
      env: { ...CLOSED, ...provider.env, JWT_JWKS_OWNER: 'nobody' },
    });
    const squatter = { stop: async () => undefined, connections: () => 0 };
    try {
      expect(await createWith(svc, await real.sign({ scope: 'bikes:write' }))).toBe(200);
      await provider.stop();
      const own = await providerKey('ES256');
      Object.assign(squatter, await squat(port, [own]));
      const before = await allBikes(svc);
      // A token naming the squatter's new kid makes the service fetch the set again: from the squatter.
      const forged = await own.sign({ sub: 'admin', scope: 'bikes:write bikes:delete' });
      const statuses = await Promise.all([1, 2, 3].map(() => createWith(svc, forged)));
      expect(statuses).toEqual([503, 503, 503]);
      // It was asked (connected to), and nothing it would have said was read.
      expect(squatter.connections()).toBeGreaterThan(0);
      expect(await allBikes(svc)).toEqual(before);
      expect(lines).toContainEqual(
        expect.objectContaining({
          msg: "the identity provider's key set could not be fetched",
          err: expect.stringContaining(`belongs to user ${NOBODY}`),
        }),
      );
      // The operator who says the provider runs as nobody is taken at their word.
      expect(await createWith(trusting, forged)).toBe(200);
    } finally {
      await squatter.stop();
      await trusting.stop();
      await svc.stop();
    }
  });
});

describe('a key set from a file (JWT_JWKS_FILE)', () => {
  let key: ProviderKey;
  const dirs: string[] = [];
  beforeAll(async () => {
    key = await providerKey('ES256');
  });
  afterAll(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A file holding the key set in a new directory of mode `dirMode` and owner `dirOwner`. */
  function keySetFile(dirOwner: number, fileOwner: number, fileMode = 0o644): string {
    const dir = tempDataDir('jwks');
    dirs.push(dir);
    fs.chmodSync(dir, 0o755);
    fs.chownSync(dir, dirOwner, dirOwner);
    const file = path.join(dir, 'jwks.json');
    fs.writeFileSync(file, JSON.stringify({ keys: [key.jwk] }), { mode: fileMode });
    fs.chownSync(file, fileOwner, fileOwner);
    fs.chmodSync(file, fileMode);
    return file;
  }

  const providerEnv = (file: string) => ({
    ...CLOSED,
    JWT_JWKS_FILE: file,
    JWT_ISSUER: ISSUER,
    JWT_AUDIENCE: AUDIENCE,
  });

  it('in a directory only root can change, its keys are accepted', async () => {
    const svc = await startTestService({ env: providerEnv(keySetFile(0, 0)) });
    try {
      expect(await createWith(svc, await key.sign({ scope: 'bikes:write' }))).toBe(200);
    } finally {
      await svc.stop();
    }
  });

  it.each([
    ['in a directory another user owns', NOBODY, 0, 0o644],
    ['that another user owns', 0, NOBODY, 0o644],
    ['that others may write to', 0, 0, 0o666],
  ])('%s, is not read: 503, nothing written', async (_name, dirOwner, fileOwner, mode) => {
    const svc = await startTestService({ env: providerEnv(keySetFile(dirOwner, fileOwner, mode)) });
    try {
      expect(await createWith(svc, await key.sign({ scope: 'bikes:write' }))).toBe(503);
      expect(await allBikes(svc)).toEqual([]);
    } finally {
      await svc.stop();
    }
  });
});

describe('a key set larger than 1 MB', () => {
  it.each([
    ['with its Content-Length', true],
    ['chunked, without a Content-Length', false],
  ])('served %s, is not read beyond 1 MB: 503, nothing written', async (_name, withLength) => {
    const key = await providerKey('RS256');
    // A valid key set, padded with keys of no use to 2 MB.
    const filler = { kty: 'oct', kid: 'filler', k: 'A'.repeat(2 * 1024 * 1024) };
    const body = JSON.stringify({ keys: [key.jwk, filler] });
    let served = 0;
    const server = http.createServer((req, res) => {
      // Nothing else here: no API document either (conformance-setup.ts asks each server for one).
      if (req.url !== '/jwks.json') return void res.writeHead(404).end();
      served++;
      res.writeHead(200, {
        'content-type': 'application/json',
        ...(withLength ? { 'content-length': Buffer.byteLength(body) } : {}),
      });
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { lines, logger } = logCapture();
    const jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
    const svc = await startTestService({
      env: { ...CLOSED, JWT_JWKS_URL: jwksUrl, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE },
      logger,
    });
    try {
      const res = await client(svc.baseUrl, await key.sign({ scope: 'bikes:write' })).request('POST', '/bikes/', {
        body: newBike(),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(served).toBeGreaterThan(0);
      expect(await allBikes(svc)).toEqual([]);
      expect(lines).toContainEqual(
        expect.objectContaining({ err: expect.stringContaining('the key set is larger than 1048576 bytes') }),
      );
    } finally {
      await svc.stop();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
