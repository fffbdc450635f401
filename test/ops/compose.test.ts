import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { freePort } from '../support/process';
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
    'is a valid compose file for a real compose implementation, with nothing set',
    () => {
      const result = spawnSync('docker-compose', ['-f', path.join(ROOT, file), 'config', '--quiet'], {
        env: { PATH: process.env.PATH },
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
