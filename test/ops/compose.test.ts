import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { freePort } from '../support/process';
import { startTestService } from '../support/service';

const ROOT = path.join(__dirname, '..', '..');
const COMPOSE_FILE = path.join(ROOT, 'docker-compose.yml');
const SCALED_FILE = path.join(ROOT, 'docker-compose.scale.yml');
const hasDockerCompose = spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0;
if (!hasDockerCompose) {
  console.log(
    'compose.test.ts: docker-compose is not installed (apt-get install docker-compose): its check is skipped',
  );
}

/** Runs the health check's command as Docker would in the api container, with PORT set there. */
async function runHealthCheck(command: string[], port: number): Promise<number> {
  const [program, ...args] = command;
  expect(program).toBe('node');
  try {
    await promisify(execFile)(process.execPath, args, { env: { PORT: String(port) }, timeout: 10_000 });
    return 0;
  } catch (err) {
    return (err as { code: number }).code;
  }
}

describe('docker-compose.yml', () => {
  const compose = parse(fs.readFileSync(COMPOSE_FILE, 'utf8')) as {
    services: { api: { environment: { PORT: string }; healthcheck: { test: string[] } } };
  };

  (hasDockerCompose ? it.each : it.skip.each)(['docker-compose.yml', 'docker-compose.scale.yml'])(
    '%s is a valid compose file for a real compose implementation',
    (file) => {
      const config = (env: Record<string, string>) =>
        spawnSync('docker-compose', ['-f', path.join(ROOT, file), 'config', '--quiet'], {
          env: { PATH: process.env.PATH, ...env },
          encoding: 'utf8',
        });
      const secrets = {
        POSTGRES_PASSWORD: 'a'.repeat(64),
        APP_DB_PASSWORD: 'b'.repeat(64),
        JWT_SECRET: 'c'.repeat(64),
      };
      const result = config(secrets);
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      // No secret has a default: without any one of them, the stack refuses to start.
      for (const name of Object.keys(secrets)) {
        const { [name as keyof typeof secrets]: _left, ...others } = secrets;
        const without = config(others);
        expect(without.status).not.toBe(0);
        expect(without.stderr).toContain(`set ${name}`);
      }
    },
  );

  it.each([COMPOSE_FILE, SCALED_FILE])(
    '%s publishes no database port, and the service queries as its own role, not the superuser',
    (file) => {
      const stack = parse(fs.readFileSync(file, 'utf8')) as {
        services: Record<string, { ports?: string[]; environment?: Record<string, string> }>;
      };
      for (const name of ['db', 'replica', 'pgbouncer']) expect(stack.services[name]?.ports).toBeUndefined();
      const api = stack.services.api.environment!;
      expect(api.DATABASE_URL).toMatch(/^postgresql:\/\/bike_catalog:/);
      expect(api.DATABASE_DIRECT_URL).toMatch(/^postgresql:\/\/postgres:/);
    },
  );

  it('gives every service of the scaled stack a health check, the api its /readyz one, behind PgBouncer and a replica', () => {
    const scaled = parse(fs.readFileSync(SCALED_FILE, 'utf8')) as {
      services: Record<string, { healthcheck?: { test: string[] }; environment?: Record<string, string> }>;
    };
    expect(Object.keys(scaled.services).sort()).toEqual(['api', 'db', 'lb', 'pgbouncer', 'replica']);
    for (const [name, service] of Object.entries(scaled.services)) {
      expect({ name, healthcheck: Boolean(service.healthcheck) }).toEqual({ name, healthcheck: true });
    }
    expect(scaled.services.api.healthcheck?.test).toEqual(compose.services.api.healthcheck.test);
    expect(scaled.services.api.environment).toMatchObject({
      DATABASE_URL: expect.stringContaining('@pgbouncer:'),
      DATABASE_DIRECT_URL: expect.stringContaining('@db:'),
      DATABASE_REPLICA_URL: expect.stringContaining('@replica:'),
    });
  });

  it('gives the api a health check that passes when /readyz answers 200 and fails when nothing answers', async () => {
    const [form, ...command] = compose.services.api.healthcheck.test;
    expect(form).toBe('CMD');
    expect(command.join(' ')).toContain('/readyz');

    const svc = await startTestService();
    try {
      expect(await runHealthCheck(command, svc.service.port)).toBe(0);
    } finally {
      await svc.stop();
    }
    expect(await runHealthCheck(command, await freePort())).toBe(1);
  });
});
