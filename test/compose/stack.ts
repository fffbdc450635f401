import { execFile, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../support/process';
import { PATIENCE_MS } from '../support/wait';

/**
 * A compose stack started for real, on the container engine DOCKER_HOST names (podman's Docker
 * API here, see deploy/podman/), by a real compose implementation (docker-compose).
 */

const ROOT = path.join(__dirname, '..', '..');
const SOCKET = (process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock').replace(/^unix:\/\//, '');

/** GET on the engine's API: JSON of a 200. */
export function engine<T>(apiPath: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath: SOCKET, path: apiPath, timeout: PATIENCE_MS }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () =>
        res.statusCode === 200
          ? resolve(JSON.parse(body) as T)
          : reject(new Error(`${apiPath}: ${res.statusCode} ${body}`)),
      );
    });
    req.on('timeout', () => req.destroy(new Error(`${apiPath}: no answer`)));
    req.on('error', reject);
  });
}

/** Why the compose tests cannot run here, or undefined when they can; asked once, as the file loads. */
export const noEngineReason: string | undefined = (() => {
  if (spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status !== 0) {
    return 'docker-compose is not installed (deploy/podman/engine.sh installs it)';
  }
  const ping = `require('http').get({ socketPath: ${JSON.stringify(SOCKET)}, path: '/_ping' }, (res) => process.exit(res.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))`;
  if (spawnSync(process.execPath, ['-e', ping], { timeout: PATIENCE_MS }).status !== 0) {
    return `no container engine answers on ${SOCKET} (deploy/podman/engine.sh starts podman's)`;
  }
  return undefined;
})();

export interface StartedStack {
  stack: Stack;
  /** The published port: the API, or nginx in front of it. */
  baseUrl: string;
  /** Every container once all were healthy. */
  healthy: Container[];
}

/**
 * Builds the service's image, then starts `file` on a free API_PORT with the images the
 * environment names, and waits until every health check passes; logs how long that took.
 */
export async function startStack(file: string): Promise<StartedStack> {
  const port = await freePort();
  const stack = new Stack(file, { ...imagesFromEnvironment(), API_PORT: String(port) });
  await stack.compose(['build'], { env: stack.env, timeoutMs: 600_000 });
  const started = Date.now();
  await stack.up();
  const healthy = await stack.waitHealthy();
  console.log(`${file}: from up to healthy in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { stack, baseUrl: `http://127.0.0.1:${port}`, healthy };
}

async function volumeNames(): Promise<string[]> {
  const { Volumes } = await engine<{ Volumes: { Name: string }[] | null }>('/volumes');
  return (Volumes ?? []).map((volume) => volume.Name);
}

interface EngineContainer {
  Id: string;
  Names: string[];
  State: string;
  Labels: Record<string, string>;
}

interface Container {
  name: string;
  service: string;
  state: string;
  /** 'healthy', 'unhealthy', 'starting', or undefined without a health check. */
  health: string | undefined;
  /** The exit code of a container that has exited (the one-shot services); undefined while it runs. */
  exitCode: number | undefined;
}

class Stack {
  readonly project: string;
  /** Every volume on the engine before the first `up`: anonymous ones carry no project label. */
  private volumesBefore: Set<string> | undefined;

  /**
   * `file`: the compose file, relative to the clone. `env`: the variables `up` is given (images,
   * ports); every other command gets none, as a user's second terminal would.
   */
  constructor(
    readonly file: string,
    readonly env: Record<string, string>,
  ) {
    this.project = `bike-catalog-test-${randomUUID().slice(0, 8)}`;
  }

  /** Runs docker-compose on this stack; its output. Fails on a non-zero exit. */
  async compose(args: string[], { env = {}, timeoutMs = PATIENCE_MS } = {}): Promise<string> {
    const { DOCKER_HOST, PATH, HOME } = process.env;
    const { stdout, stderr } = await promisify(execFile)(
      'docker-compose',
      ['-f', path.join(ROOT, this.file), '-p', this.project, '--ansi', 'never', ...args],
      {
        // The project's name, as a clone's .env gives it (deploy/compose-project.sh): the files need it.
        env: { DOCKER_HOST, PATH, HOME, COMPOSE_PROJECT_NAME: this.project, ...env },
        timeout: timeoutMs,
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    return `${stdout}${stderr}`;
  }

  /**
   * `up -d` with the stack's variables. Under podman, health checks run only where something runs
   * them (deploy/podman/engine.sh starts health-checks.sh); compose waits on them.
   */
  async up(extra: string[] = [], timeoutMs = PATIENCE_MS): Promise<void> {
    this.volumesBefore ??= new Set(await volumeNames());
    await this.compose(['up', '-d', ...extra], { env: this.env, timeoutMs });
  }

  async containers(): Promise<Container[]> {
    const filters = encodeURIComponent(JSON.stringify({ label: [`com.docker.compose.project=${this.project}`] }));
    const found = await engine<EngineContainer[]>(`/containers/json?all=1&filters=${filters}`);
    // The list does not say how a health check stands (under podman); each container's inspection does.
    return Promise.all(
      found.map(async (c) => {
        const { State } = await engine<{ State: { Health?: { Status: string }; ExitCode: number } }>(
          `/containers/${c.Id}/json`,
        );
        return {
          name: c.Names[0].replace(/^\//, ''),
          service: c.Labels['com.docker.compose.service'],
          state: c.State,
          health: State.Health?.Status || undefined,
          exitCode: c.State === 'exited' ? State.ExitCode : undefined,
        };
      }),
    );
  }

  /** Waits until every running container with a health check reports healthy; how long it took. */
  async waitHealthy(timeoutMs = PATIENCE_MS): Promise<Container[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const containers = await this.containers();
      const waiting = containers.filter(
        (c) => c.state === 'running' && c.health !== undefined && c.health !== 'healthy',
      );
      if (waiting.length === 0) return containers;
      if (Date.now() > deadline) {
        throw new Error(`not healthy after ${timeoutMs} ms: ${waiting.map((c) => `${c.name} ${c.health}`).join(', ')}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }

  /** Whatever of this project is left on the engine: containers, volumes, networks. */
  async leftovers(): Promise<string[]> {
    const filters = encodeURIComponent(JSON.stringify({ label: [`com.docker.compose.project=${this.project}`] }));
    const containers = await engine<EngineContainer[]>(`/containers/json?all=1&filters=${filters}`);
    const volumes = (await volumeNames()).filter((name) => !this.volumesBefore?.has(name));
    const networks = await engine<{ Name: string }[]>(`/networks?filters=${filters}`);
    return [
      ...containers.map((c) => `container ${c.Names[0]}`),
      ...volumes.map((name) => `volume ${name}`),
      ...networks.map((n) => `network ${n.Name}`),
    ];
  }

  /**
   * `down -v`, whatever state the stack is in: for afterAll. `--rmi local` removes the service's
   * images too: they are named after this test's project, so no later run would use them.
   */
  async remove(): Promise<void> {
    await this.compose(['down', '-v', '--rmi', 'local', '--remove-orphans', '--timeout', '20']).catch(() => undefined);
  }
}

/** The service's answers, through a published port. */
export async function apiClient(baseUrl: string) {
  const tokenResponse = await fetch(`${baseUrl}/api/user`, { method: 'POST' });
  const { token } = (await tokenResponse.json()) as { token: string };
  return {
    token,
    get: (route: string, headers: Record<string, string> = {}) => fetch(`${baseUrl}${route}`, { headers }),
    create: (fields: unknown) =>
      fetch(`${baseUrl}/bikes/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(fields),
      }),
  };
}

/** The images `up` is given: the stand-ins where the environment names them (deploy/podman/stand-ins.env). */
function imagesFromEnvironment(): Record<string, string> {
  const names = ['POSTGRES_IMAGE', 'NODE_IMAGE', 'NGINX_IMAGE', 'PGBOUNCER_IMAGE'];
  return Object.fromEntries(names.flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : [])));
}

/** A bike to create. */
export const bike = (title: string) => ({
  title,
  productType: 'Road',
  createdAt: '2026-03-01T10:00:00Z',
  description: 'An endurance road bike',
  vendor: 'Trek',
  availableForSale: true,
  totalInventory: 3,
  priceRange: { minPrice: { amount: 1899, currencyCode: 'USD' }, maxPrice: { amount: 2199, currencyCode: 'USD' } },
});
