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

/** Where a service listens: the port it was given, until it says which one it bound. */
interface Listening {
  port: string;
}

/**
 * Runs the built service (`node dist/server.js`, what `npm start` runs after building) as a
 * separate process, without waiting for it: for a start that is meant to fail. It is given
 * `env.PORT`, or a free port when that is unset. `npm test` builds dist/ first. `root` is the
 * project directory to run it from (this one unless a test made a copy elsewhere).
 */
export async function launchService(
  env: Record<string, string>,
  { root = ROOT }: { root?: string } = {},
): Promise<ServiceProcess> {
  return (await launch(env, root, { port: env.PORT ?? String(await freePort()) })).service;
}

async function launch(
  env: Record<string, string>,
  root: string,
  listening: Listening,
): Promise<{ service: ServiceProcess; listening: Listening }> {
  const { DATABASE_URL: _url, JWT_SECRET: _secret, DATA_DIR: _dir, PORT: _port, ...inherited } = process.env;
  const child = spawn(process.execPath, [path.join(root, 'dist', 'server.js')], {
    cwd: root,
    env: { ...inherited, LOG_LEVEL: 'info', ...env, PORT: listening.port },
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
  const service: ServiceProcess = {
    child,
    get baseUrl() {
      return `http://127.0.0.1:${listening.port}`;
    },
    output: () => output,
    errors: () => errors,
    exited,
  };
  return { service, listening };
}

/** The port in the service's own line that it listens (src/server.ts), once it has written it. */
function portItSaid(output: string): string | undefined {
  for (const line of output.split('\n')) {
    if (!line.includes('"listening on ')) continue;
    try {
      const entry = JSON.parse(line) as { msg?: unknown; port?: unknown };
      if (typeof entry.msg === 'string' && entry.msg.startsWith('listening on ') && typeof entry.port === 'number')
        return String(entry.port);
    } catch {
      // not a log line of its own
    }
  }
  return undefined;
}

/** Whether a service run with `env` logs its listening line (an info line). */
function logsListening(env: Record<string, string>): boolean {
  return ['trace', 'debug', 'info'].includes(env.LOG_LEVEL ?? 'info');
}

/**
 * launchService, then waits (for PATIENCE_MS at most) until the service says, in its own
 * listening line, which port it bound: port 0 unless the test names a PORT, so the system gives
 * it one no other process holds. A port chosen beforehand may be taken meanwhile by another
 * process on this machine (another test run's service, while this one still makes its cluster),
 * whose answers would be taken for this one's, as if it were up. Only with a LOG_LEVEL that hides
 * that line does it wait until the port answers HTTP instead.
 */
export async function spawnService(
  env: Record<string, string>,
  { root = ROOT }: { root?: string } = {},
): Promise<ServiceProcess> {
  const byLine = logsListening(env);
  const { service, listening } = await launch(env, root, {
    port: env.PORT ?? (byLine ? '0' : String(await freePort())),
  });
  const { child, output, exited } = service;

  const deadline = Date.now() + PATIENCE_MS;
  let exitedEarly = false;
  void exited.then(() => (exitedEarly = true));
  for (;;) {
    if (exitedEarly) throw new Error(`service exited during start-up:\n${output()}`);
    const said = portItSaid(output());
    if (said !== undefined) {
      listening.port = said;
      break;
    }
    if (
      !byLine &&
      (await fetch(`${service.baseUrl}/bikes/by-handle/-`).then(
        () => true,
        () => false,
      ))
    )
      break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`service did not say it listens within ${PATIENCE_MS} ms:\n${output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return service;
}
