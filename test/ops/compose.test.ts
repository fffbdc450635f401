import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { freePort } from '../support/process';
import { tempDataDir } from '../support/temp-dir';
import { startTestService } from '../support/service';
import { PATIENCE_MS } from '../support/wait';

/**
 * What can be checked of the compose files without a container engine. `npm run test:compose`
 * starts them for real (test/compose/).
 */

const ROOT = path.join(__dirname, '..', '..');
const FILES = ['docker-compose.yml', 'deploy/bike-catalog-scaled/docker-compose.yml'];
const hasDockerCompose = spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0;
if (!hasDockerCompose) {
  console.log(
    'compose.test.ts: docker-compose is not installed (apt-get install docker-compose): its check is skipped',
  );
}

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  ports?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  restart?: string;
}
const stackOf = (file: string) =>
  parse(fs.readFileSync(path.join(ROOT, file), 'utf8')) as { services: Record<string, Service> };

/** The named volumes a service mounts whose names end in "secrets", as `volume:path[:ro]`. */
const secretVolumes = (service: Service) => (service.volumes ?? []).filter((mount) => /^[\w-]*secrets:/.test(mount));

describe.each(FILES)('%s', (file) => {
  const stack = stackOf(file);

  (hasDockerCompose ? it : it.skip)(
    "is a valid compose file for a real compose implementation, with nothing set but its project's name",
    () => {
      const result = spawnSync('docker-compose', ['-f', path.join(ROOT, file), 'config', '--quiet'], {
        env: { PATH: process.env.PATH, COMPOSE_PROJECT_NAME: 'bike-catalog-test' },
        encoding: 'utf8',
      });
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
    },
  );

  it('gives no service a secret in its configuration: passwords and the signing secret come from files', () => {
    for (const [name, service] of Object.entries(stack.services)) {
      for (const [variable, value] of Object.entries(service.environment ?? {})) {
        // The identity provider's key set is a public address, with no password in it.
        const secret = /PASSWORD$|SECRET$|_URL$/.test(variable) && variable !== 'JWT_JWKS_URL';
        expect({ name, variable, secret }).toEqual({
          name,
          variable,
          secret: false,
        });
        expect(String(value)).not.toMatch(/^postgres(ql)?:\/\//);
      }
    }
    expect(stack.services.api.environment).toMatchObject({
      JWT_SECRET_FILE: '/secrets/jwt_secret',
      DATABASE_URL_FILE: '/secrets/database_url',
    });
  });

  it('migrates in a one-shot migrate service, as the superuser, which the api waits for', () => {
    expect(stack.services.migrate).toMatchObject({
      command: ['node', 'dist/cli/migrate.js'],
      environment: {
        DATABASE_DIRECT_URL_FILE: '/secrets/database_direct_url',
        DATABASE_URL_FILE: '/secrets/database_url',
      },
      depends_on: { db: { condition: 'service_healthy' } },
      restart: 'no',
    });
    expect(stack.services.api.depends_on?.migrate).toEqual({ condition: 'service_completed_successfully' });
  });

  it('gives the api only its own secrets: neither the superuser’s connection string nor a volume that holds it', () => {
    expect(Object.keys(stack.services.api.environment ?? {})).not.toContain('DATABASE_DIRECT_URL_FILE');
    expect(secretVolumes(stack.services.api)).toEqual(['api-secrets:/secrets:ro']);
    // The superuser's secrets are in the "secrets" volume, which only PostgreSQL and migrate read.
    const readers = Object.entries(stack.services)
      .filter(([, service]) => secretVolumes(service).some((mount) => mount.startsWith('secrets:')))
      .map(([name]) => name);
    expect(readers.sort()).toEqual(['db', 'migrate', 'secrets']);
  });

  it('publishes the database on 127.0.0.1 only, on a port of your choice, and /metrics nowhere', () => {
    expect(stack.services.db.ports).toEqual(['127.0.0.1:${DB_PORT:-}:5432']);
    for (const name of ['replica', 'pgbouncer']) expect(stack.services[name]?.ports).toBeUndefined();
    expect(stack.services.api.environment?.METRICS_PORT).toBe('9100');
    // Inside the stack's network, where it is scraped, it listens on every interface.
    expect(stack.services.api.environment?.METRICS_HOST).toBe('0.0.0.0');
    const published = Object.values(stack.services).flatMap((service) => service.ports ?? []);
    expect(published.filter((port) => port.includes('9100'))).toEqual([]);
    expect(published).toContainEqual(expect.stringMatching(/^\$\{API_PORT:-3000\}:/));
  });

  it('names every image by a variable whose default is the official image', () => {
    const images = Object.values(stack.services).flatMap((service) => (service.image ? [service.image] : []));
    for (const image of images) {
      expect(image).toMatch(/^\$\{(POSTGRES|PGBOUNCER|NGINX)_IMAGE:-(postgres|edoburu\/pgbouncer|nginx):[\w.-]+\}$/);
    }
  });

  it("builds the service's image under the project's name, not one every clone on the machine shares", () => {
    const built = Object.entries(stack.services).filter(([, service]) => service.build !== undefined);
    expect(built.map(([name]) => name).sort()).toEqual(['api', 'migrate']);
    // Without `image:`, compose tags it <project>_<service>.
    for (const [name, service] of built) expect({ name, image: service.image }).toEqual({ name, image: undefined });
  });
});

(hasDockerCompose ? describe : describe.skip)('two clones in directories of the same name', () => {
  // Made in beforeAll: the body of a describe runs even when it is skipped.
  let scratch: string;
  /** A Docker engine that has nothing, and notes which project each `docker-compose` asked about. */
  let engine: http.Server;
  const asked: string[] = [];
  let socket: string;

  beforeAll(async () => {
    scratch = tempDataDir('compose-clones');
    socket = path.join(scratch, 'engine.sock');
    engine = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://engine');
      const filters = url.searchParams.get('filters');
      const labels = filters ? ((JSON.parse(filters) as { label?: string[] }).label ?? []) : [];
      for (const label of labels) {
        const project = /^com\.docker\.compose\.project=(.*)$/.exec(label)?.[1];
        if (project) asked.push(project);
      }
      if (url.pathname === '/version') return void res.end(JSON.stringify({ ApiVersion: '1.41', Version: '20.10.0' }));
      if (/\/(networks|volumes)\//.test(url.pathname))
        return void res.writeHead(404).end('{"message":"no such thing"}');
      res.end('[]');
    });
    await new Promise<void>((resolve) => engine.listen(socket, resolve));
  });
  afterAll(() => {
    engine.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  /** A clone of the compose files and the script that names their projects, at `dir`. */
  const clone = (dir: string) => {
    for (const file of [...FILES, 'deploy/secrets.sh', 'deploy/compose-project.sh']) {
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.copyFileSync(path.join(ROOT, file), path.join(dir, file));
    }
    return dir;
  };
  /** `docker-compose ps` of `file` in the clone, as a user runs it there: the projects it asked the engine about. */
  const ps = async (dir: string, file: string) => {
    asked.length = 0;
    const { PATH, HOME } = process.env;
    await promisify(execFile)('docker-compose', ['-f', file, 'ps'], {
      cwd: dir,
      env: { PATH, HOME, DOCKER_HOST: `unix://${socket}` },
      timeout: PATIENCE_MS,
    });
    return [...new Set(asked)];
  };
  const nameIt = (dir: string) => spawnSync('sh', ['deploy/compose-project.sh'], { cwd: dir, encoding: 'utf8' });

  it('gives each clone its projects of its own (deploy/compose-project.sh), and refuses to run until it has', async () => {
    const first = clone(path.join(scratch, 'a', 'bike-catalog'));
    const second = clone(path.join(scratch, 'b', 'bike-catalog'));
    // Before: not even `ps`, which would show another clone's stack, and nothing asked of the engine.
    const unnamed = await ps(second, 'docker-compose.yml').catch((err: { stderr: string }) => err.stderr);
    expect(unnamed).toContain('run deploy/compose-project.sh first, once per clone');
    expect(asked).toEqual([]);

    fs.writeFileSync(path.join(first, '.env'), 'TOKEN_ISSUANCE=closed');
    for (const dir of [first, second]) expect(nameIt(dir).status).toBe(0);
    expect(fs.readFileSync(path.join(first, '.env'), 'utf8')).toMatch(
      /^TOKEN_ISSUANCE=closed\nCOMPOSE_PROJECT_NAME=bike-catalog-\d+\n$/,
    );
    for (const file of FILES) {
      const projects = [await ps(first, file), await ps(second, file)];
      // docker-compose 1.29 asks about its project's name, and about that name without its hyphens.
      for (const names of projects) expect(names[0]).toMatch(/^bike-catalog-\d+(-scaled)?$/);
      expect(projects[0][0]).not.toBe(projects[1][0]);
      expect(projects[1]).not.toContain(projects[0][0]);
    }
    // Once named, for good: the script again keeps the name.
    const named = fs.readFileSync(path.join(second, '.env'), 'utf8');
    expect(nameIt(second).stdout).toContain('keeps');
    expect(fs.readFileSync(path.join(second, '.env'), 'utf8')).toBe(named);
  });
});

describe('the scaled stack', () => {
  const scaled = stackOf(FILES[1]);

  it('gives every long-running service a health check and a restart policy, and the api waits for no replica', () => {
    const oneShot = ['secrets', 'migrate'];
    for (const [name, service] of Object.entries(scaled.services).filter(([name]) => !oneShot.includes(name))) {
      expect({ name, healthcheck: Boolean(service.healthcheck), restart: service.restart }).toEqual({
        name,
        healthcheck: true,
        restart: 'unless-stopped',
      });
    }
    expect(Object.keys(scaled.services.api.depends_on ?? {}).sort()).toEqual(['db', 'migrate', 'pgbouncer']);
    expect(scaled.services.api.environment?.DATABASE_REPLICA_URL_FILE).toBe('/secrets/database_replica_url');
    expect(scaled.services.secrets.environment).toEqual({ DATABASE_HOST: 'pgbouncer', REPLICA_HOST: 'replica' });
    // Healthy only while it streams, not merely while it answers.
    expect(scaled.services.replica.healthcheck?.test.join(' ')).toContain('pg_stat_wal_receiver');
  });

  it('gives PgBouncer and the replica a secrets volume each, of their own', () => {
    expect(secretVolumes(scaled.services.pgbouncer)).toEqual(['pgbouncer-secrets:/secrets:ro']);
    expect(secretVolumes(scaled.services.replica)).toEqual(['replica-secrets:/secrets:ro']);
  });
});

describe('the api health check (node dist/cli/healthcheck.js)', () => {
  const run = async (port: number) => {
    try {
      await promisify(execFile)(process.execPath, [path.join(ROOT, 'dist', 'cli', 'healthcheck.js')], {
        env: { PORT: String(port) },
        timeout: PATIENCE_MS,
      });
      return 0;
    } catch (err) {
      return (err as { code: number }).code;
    }
  };

  it('is what both stacks run', () => {
    for (const file of FILES) {
      expect(stackOf(file).services.api.healthcheck?.test).toEqual(['CMD', 'node', 'dist/cli/healthcheck.js']);
    }
  });

  it('passes when /readyz answers 200 and fails when nothing answers', async () => {
    const svc = await startTestService();
    try {
      expect(await run(svc.service.port)).toBe(0);
    } finally {
      await svc.stop();
    }
    expect(await run(await freePort())).toBe(1);
  });
});
