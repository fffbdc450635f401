import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import jwt from 'jsonwebtoken';
import { OPERATOR_ISSUER } from '../../src/auth/caller';
import { client, newBike } from '../support/bikes';
import { startTestService, type TestService } from '../support/service';
import { tempDataDir } from '../support/temp-dir';

/**
 * `npm run token -- --username <name> [--ttl <seconds>]`, the operator's command
 * (docs/reference/callers.md#who-may-write): it signs with the service's own secret, prints the token
 * alone, and a service whose issuance is closed accepts it. Runs the built command (`npm test`
 * builds dist/ first).
 */

const ROOT = path.join(__dirname, '..', '..');
const run = promisify(execFile);

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** The command with only `env` for its settings (none of this process's service settings). */
async function token(args: string[], env: Record<string, string>, command = 'node'): Promise<Outcome> {
  const { DATABASE_URL: _url, JWT_SECRET: _secret, JWT_SECRET_FILE: _file, DATA_DIR: _dir, ...inherited } = process.env;
  const argv = command === 'node' ? [path.join(ROOT, 'dist', 'cli', 'token.js'), ...args] : args;
  try {
    const { stdout, stderr } = await run(command === 'node' ? process.execPath : command, argv, {
      cwd: ROOT,
      env: { ...inherited, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const payloadOf = (text: string) => jwt.decode(text.trim(), { json: true });

describe('npm run token', () => {
  let svc: TestService;
  let env: Record<string, string>;
  const dirs: string[] = [];
  const tempDir = () => {
    dirs.push(tempDataDir('token-cli'));
    return dirs[dirs.length - 1];
  };
  beforeAll(async () => {
    svc = await startTestService({ env: { TOKEN_ISSUANCE: 'closed' } });
    env = { JWT_SECRET: svc.jwtSecret };
  });
  afterAll(async () => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    await svc?.stop();
  });

  it('prints one token for the username, over the service secret, with the operator issuer and the ttl, which a closed service accepts', async () => {
    const before = Math.floor(Date.now() / 1000);
    const { code, stdout, stderr } = await token(['--username', 'ops-sync', '--ttl', '120'], env);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    const payload = jwt.verify(stdout.trim(), svc.jwtSecret, { algorithms: ['HS256'] }) as jwt.JwtPayload;
    expect(Object.keys(payload).sort()).toEqual(['exp', 'iat', 'iss', 'jti', 'scope', 'username']);
    // Every scope when --scopes is absent (docs/reference/callers.md#scopes).
    expect(payload).toMatchObject({ username: 'ops-sync', iss: OPERATOR_ISSUER, scope: 'bikes:write bikes:delete' });
    expect(payload.iat).toBeGreaterThanOrEqual(before);
    expect(payload.exp).toBe((payload.iat as number) + 120);
    const api = client(svc.baseUrl, stdout.trim());
    const bike = await api.create(newBike());
    expect((await api.request('DELETE', `/bikes/${bike.id}`)).status).toBe(200);
  });

  it('with --scopes, the token carries those scopes only: a bikes:write token may not delete (403 insufficient_scope)', async () => {
    const { code, stdout } = await token(['--username', 'ops', '--scopes', 'bikes:write'], env);
    expect(code).toBe(0);
    expect(jwt.decode(stdout.trim())).toMatchObject({ scope: 'bikes:write' });
    const api = client(svc.baseUrl, stdout.trim());
    const bike = await api.create(newBike());
    const res = await api.request('DELETE', `/bikes/${bike.id}`);
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
    expect((await token(['--username', 'ops', '--scopes', 'bikes:everything'], env)).code).toBe(2);
  });

  it('without --ttl, the token lives 1800 s; each run prints another token', async () => {
    const first = await token(['--username', 'ops'], env);
    const second = await token(['--username', 'ops'], env);
    expect(first.code).toBe(0);
    const payload = payloadOf(first.stdout);
    expect(payload?.exp).toBe((payload?.iat as number) + 1800);
    expect(second.stdout).not.toBe(first.stdout);
  });

  it.each([['1801'], ['3600'], ['0'], ['-5'], ['1.5'], ['ten'], ['']])(
    'refuses --ttl %p (1 to 1800 s, the longest the service accepts), exit 2, printing no token',
    async (ttl) => {
      const { code, stdout, stderr } = await token(['--username', 'ops', '--ttl', ttl], env);
      expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
      expect(stderr).toMatch(/--ttl/);
      expect(stderr).toMatch(/usage: npm run -s token -- --username <name> \[--ttl <seconds, 1 to 1800>\]/);
    },
  );

  it.each([
    ['no --username', []],
    ['an empty --username', ['--username', '']],
    ['an option it does not know', ['--username', 'ops', '--admin']],
  ])('refuses %s, exit 2, printing the usage and no token', async (_name, args) => {
    const { code, stdout, stderr } = await token(args, env);
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(stderr).toMatch(/usage: npm run -s token -- --username <name>/);
  });

  it("signs with the secret the embedded database's DATA_DIR keeps, and makes none where there is none", async () => {
    const dataDir = tempDir();
    const missing = await token(['--username', 'ops'], { DATA_DIR: dataDir });
    expect({ code: missing.code, stdout: missing.stdout }).toEqual({ code: 1, stdout: '' });
    expect(missing.stderr).toMatch(/jwt-secret does not exist: start the service once/);
    expect(fs.existsSync(path.join(dataDir, 'jwt-secret'))).toBe(false);

    const secret = randomBytes(32).toString('base64url');
    fs.writeFileSync(path.join(dataDir, 'jwt-secret'), secret, { mode: 0o600 });
    const made = await token(['--username', 'ops'], { DATA_DIR: dataDir });
    expect(made.code).toBe(0);
    expect(jwt.verify(made.stdout.trim(), secret, { algorithms: ['HS256'] })).toMatchObject({ username: 'ops' });
  });

  it('reads JWT_SECRET_FILE as the service does', async () => {
    const file = path.join(tempDir(), 'secret');
    fs.writeFileSync(file, `${svc.jwtSecret}\n`, { mode: 0o600 });
    const { code, stdout } = await token(['--username', 'ops'], { JWT_SECRET_FILE: file });
    expect(code).toBe(0);
    expect(jwt.verify(stdout.trim(), svc.jwtSecret, { algorithms: ['HS256'] })).toMatchObject({ username: 'ops' });
  });

  it('refuses settings the service would refuse, with their one line, and never prints the secret', async () => {
    const weak = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
    for (const [settings, message] of [
      [{ JWT_SECRET: weak }, /JWT_SECRET must be at least 32 bytes long with at least 8 different characters/],
      [{ DATABASE_URL: svc.databaseUrl }, /JWT_SECRET is not set/],
      [{ ...env, TOKEN_ISSUANCE: 'shut' }, /TOKEN_ISSUANCE must be open or closed, got "shut"/],
    ] as const) {
      const { code, stdout, stderr } = await token(['--username', 'ops'], settings);
      expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
      expect(stderr).toMatch(message);
      expect(stderr.trim().split('\n')).toHaveLength(1);
      expect(stderr).not.toContain(weak);
    }
    const { stdout, stderr } = await token(['--username', 'ops'], env);
    expect(stdout + stderr).not.toContain(svc.jwtSecret);
  });

  it('runs as `npm run -s token -- --username <name>`, printing the token alone', async () => {
    const { code, stdout } = await token(['run', '-s', 'token', '--', '--username', 'ops', '--ttl', '60'], env, 'npm');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    expect(payloadOf(stdout)).toMatchObject({ username: 'ops', iss: OPERATOR_ISSUER });
    // npm runs the build first (tsc -b), which on a busy machine takes a while.
  });
});
