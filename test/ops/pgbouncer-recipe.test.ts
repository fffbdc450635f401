import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { client, issueToken, newBike } from '../support/bikes';
import { createEmptyTestDatabase } from '../support/databases';
import { spawnService, type ServiceProcess } from '../support/process';
import { type Bouncer, missing, PGBOUNCER, startPgBouncer } from '../support/servers';

const why = missing(PGBOUNCER);
if (why) console.log(`ops/pgbouncer-recipe.test.ts skipped: ${why}`);

/** docs/scaling-and-containers.md's pgbouncer.ini, as an operator copies it. */
const GUIDE = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'scaling-and-containers.md'), 'utf8');
const RECIPE = /### Your own PgBouncer[\s\S]*?```ini\n([\s\S]*?)```/.exec(GUIDE)?.[1] ?? '';

/**
 * The guide's recipe for one's own PgBouncer, run by Debian's PgBouncer in front of a real
 * PostgreSQL, with the SCRAM verifier in its auth file: the service migrates and serves through it.
 */
(why ? describe.skip : describe)("docs/scaling-and-containers.md's PgBouncer recipe", () => {
  let bouncer: Bouncer;
  let svc: ServiceProcess;

  beforeAll(async () => {
    const direct = await createEmptyTestDatabase();
    bouncer = await startPgBouncer(direct, RECIPE);
    svc = await spawnService({ DATABASE_URL: bouncer.url, JWT_SECRET: randomBytes(32).toString('base64url') });
  });
  afterAll(async () => {
    svc?.child.kill('SIGTERM');
    await svc?.exited;
    await bouncer?.remove();
  });

  it('names the settings an operator must choose, and the service writes and reads through it', async () => {
    for (const setting of [
      'pool_mode = transaction',
      'auth_type = scram-sha-256',
      'server_login_retry',
      'query_wait_timeout',
    ]) {
      expect(RECIPE).toContain(setting);
    }
    const api = client(svc.baseUrl, await issueToken(svc.baseUrl));
    const bike = await api.create(newBike());
    expect(await (await fetch(`${svc.baseUrl}/bikes/${bike.id}`)).json()).toEqual(bike);
  });
});
