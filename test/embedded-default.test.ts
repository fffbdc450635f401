import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import jwt from 'jsonwebtoken';
import { client, newBike } from './support/bikes';
import { createTestDatabase } from './support/databases';
import { spawnService } from './support/process';
import { tempDataDir } from './support/temp-dir';

/** The service as `npm start` runs it, with no DATABASE_URL: its own PostgreSQL in DATA_DIR. */
describe('the service on its embedded database', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = tempDataDir('data');
  });
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('keeps bikes and its signing secret across a restart, and stops PostgreSQL on SIGTERM', async () => {
    const first = await spawnService({ DATA_DIR: dataDir });
    const tokenRes = await fetch(`${first.baseUrl}/api/user`, { method: 'POST' });
    const { token } = (await tokenRes.json()) as { token: string };
    const created = await client(first.baseUrl, token).create(newBike());

    const secretFile = path.join(dataDir, 'jwt-secret');
    expect(fs.statSync(secretFile).mode & 0o777).toBe(0o600);
    const secret = fs.readFileSync(secretFile, 'utf8');
    expect(Buffer.from(secret, 'base64url')).toHaveLength(32);
    expect(jwt.verify(token, secret, { algorithms: ['HS256'] })).toMatchObject({ exp: expect.any(Number) });

    first.child.kill('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });
    expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    expect(fs.readFileSync(path.join(dataDir, 'postgres.log'), 'utf8')).toMatch(/database system is shut down/);

    const second = await spawnService({ DATA_DIR: dataDir });
    try {
      const api = client(second.baseUrl, token);
      const read = await api.request('GET', `/bikes/${created.id}`);
      expect(read.status).toBe(200);
      expect(await read.json()).toEqual(created);
      // The token issued before the restart still verifies: the secret was reused.
      const del = await api.request('DELETE', `/bikes/${created.id}`);
      expect(del.status).toBe(200);
    } finally {
      second.child.kill('SIGTERM');
      expect((await second.exited).code).toBe(0);
    }
    const output = first.output() + second.output();
    expect(output).not.toContain(secret);
    expect(output).not.toContain(fs.readFileSync(path.join(dataDir, 'postgres-password'), 'utf8'));
    expect(output).not.toContain(token);
  });

  const SECRET = 'a-secret-given-by-the-operator-0123456789';
  it.each([
    ['JWT_SECRET', () => ({ JWT_SECRET: SECRET })],
    [
      'JWT_SECRET_FILE, read without its final newline',
      () => {
        const file = path.join(dataDir, 'given-secret');
        fs.writeFileSync(file, `${SECRET}\n`, { mode: 0o600 });
        return { JWT_SECRET_FILE: file };
      },
    ],
  ])('signs with the secret given in %s', async (_how, given) => {
    const svc = await spawnService({ DATA_DIR: dataDir, ...given() });
    try {
      const res = await fetch(`${svc.baseUrl}/api/user`, { method: 'POST' });
      const { token } = (await res.json()) as { token: string };
      expect(jwt.verify(token, SECRET, { algorithms: ['HS256'] })).toBeTruthy();
      expect(svc.output()).not.toContain(SECRET);
    } finally {
      svc.child.kill('SIGTERM');
      await svc.exited;
    }
  });
});

describe('the embedded database when its password file is lost', () => {
  it('refuses to start and keeps the cluster, instead of making a new, empty one', async () => {
    const dataDir = tempDataDir('data');
    try {
      const first = await spawnService({ DATA_DIR: dataDir });
      const tokenRes = await fetch(`${first.baseUrl}/api/user`, { method: 'POST' });
      const { token } = (await tokenRes.json()) as { token: string };
      await client(first.baseUrl, token).create(newBike());
      first.child.kill('SIGTERM');
      expect((await first.exited).code).toBe(0);

      fs.rmSync(path.join(dataDir, 'postgres-password'));
      await expect(spawnService({ DATA_DIR: dataDir })).rejects.toThrow(/postgres-password is missing/);
      expect(fs.existsSync(path.join(dataDir, 'postgres', 'PG_VERSION'))).toBe(true);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the service on an external database (DATABASE_URL)', () => {
  it('refuses to start without JWT_SECRET, and says why', async () => {
    const databaseUrl = await createTestDatabase();
    await expect(spawnService({ DATABASE_URL: databaseUrl })).rejects.toThrow(/JWT_SECRET is not set/);
  });

  it('applies the migrations and serves with the JWT_SECRET given', async () => {
    const databaseUrl = await createTestDatabase();
    const svc = await spawnService({
      DATABASE_URL: databaseUrl,
      JWT_SECRET: 'operator-secret-for-the-external-db-0123',
    });
    try {
      const res = await fetch(`${svc.baseUrl}/bikes/all`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual([]);
      // (TEST_DATABASE_URL may name a server that needs no password.)
      const password = new URL(databaseUrl).password;
      expect(password === '' || !svc.output().includes(password)).toBe(true);
    } finally {
      svc.child.kill('SIGTERM');
      expect((await svc.exited).code).toBe(0);
    }
  });

  it('reads DATABASE_URL and JWT_SECRET from the files DATABASE_URL_FILE and JWT_SECRET_FILE name', async () => {
    const dir = tempDataDir('setting-files');
    const databaseUrl = await createTestDatabase();
    fs.writeFileSync(path.join(dir, 'database_url'), `${databaseUrl}\n`, { mode: 0o600 });
    fs.writeFileSync(path.join(dir, 'jwt_secret'), 'a-secret-in-a-file-for-the-external-db-0123\n', { mode: 0o600 });
    const svc = await spawnService({
      DATABASE_URL_FILE: path.join(dir, 'database_url'),
      JWT_SECRET_FILE: path.join(dir, 'jwt_secret'),
    });
    try {
      const created = await fetch(`${svc.baseUrl}/api/user`, { method: 'POST' });
      const { token } = (await created.json()) as { token: string };
      expect(jwt.verify(token, 'a-secret-in-a-file-for-the-external-db-0123', { algorithms: ['HS256'] })).toBeTruthy();
      expect((await fetch(`${svc.baseUrl}/bikes/all`)).status).toBe(200);
      expect(svc.output()).not.toContain(databaseUrl);
    } finally {
      svc.child.kill('SIGTERM');
      expect((await svc.exited).code).toBe(0);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the service when its embedded database cannot start', () => {
  it('exits 1 with one line on stderr that says what failed and what to do, never a stack trace', async () => {
    const dir = tempDataDir('unusable');
    try {
      // DATA_DIR below a regular file: it cannot be made, as on a read-only or full disk.
      fs.writeFileSync(path.join(dir, 'file'), '');
      const { DATABASE_URL: _url, JWT_SECRET: _secret, ...env } = process.env;
      const child = spawn(process.execPath, [path.join(__dirname, '..', 'dist', 'server.js')], {
        env: { ...env, PORT: '0', DATA_DIR: path.join(dir, 'file', 'data') },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk) => (stderr += chunk));
      const code = await new Promise((resolve) => child.once('exit', resolve));
      expect(code).toBe(1);
      expect(stderr.trimEnd().split('\n')).toEqual([
        expect.stringMatching(
          /^bike catalog failed to start: the embedded PostgreSQL could not start: ENOTDIR.*; set DATABASE_URL/,
        ),
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
