import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { PATIENCE_MS } from './wait';

const ROOT = path.join(__dirname, '..', '..');

export interface ServiceProcess {
  child: ChildProcess;
  baseUrl: string;
  /** Everything the process has written to stdout and stderr so far. */
  output(): string;
  /** What it has written to stderr so far. */
  errors(): string;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Runs the built service (`node dist/server.js`, what `npm start` runs after building) as a
 * separate process on `env.PORT` (a free port when unset), without waiting for it: for a start
 * that is meant to fail. `npm test` builds dist/ first. `root` is the project directory to run it
 * from (this one unless a test made a copy elsewhere).
 */
export async function launchService(
  env: Record<string, string>,
  { root = ROOT }: { root?: string } = {},
): Promise<ServiceProcess> {
  const port = env.PORT ?? String(await freePort());
  const { DATABASE_URL: _url, JWT_SECRET: _secret, DATA_DIR: _dir, PORT: _port, ...inherited } = process.env;
  const child = spawn(process.execPath, [path.join(root, 'dist', 'server.js')], {
    cwd: root,
    env: { ...inherited, LOG_LEVEL: 'info', ...env, PORT: port },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let errors = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => {
    output += chunk;
    errors += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, baseUrl: `http://127.0.0.1:${port}`, output: () => output, errors: () => errors, exited };
}

/** launchService, then waits until the service answers HTTP (for PATIENCE_MS at most). */
export async function spawnService(
  env: Record<string, string>,
  { root = ROOT }: { root?: string } = {},
): Promise<ServiceProcess> {
  const service = await launchService(env, { root });
  const { child, baseUrl, output, exited } = service;

  const deadline = Date.now() + PATIENCE_MS;
  let exitedEarly = false;
  void exited.then(() => (exitedEarly = true));
  for (;;) {
    if (exitedEarly) throw new Error(`service exited during start-up:\n${output()}`);
    try {
      await fetch(`${baseUrl}/bikes/by-handle/-`);
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`service did not answer within ${PATIENCE_MS} ms:\n${output()}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return service;
}
