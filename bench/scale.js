'use strict';

/**
 * npm run bench:scale [-- --count 20000 --duration 5 --rounds 3 --connections 20]
 *
 * What one instance of the service does on this machine, straight to PostgreSQL and through
 * PgBouncer in transaction mode, and what two instances do through PgBouncer, with the same
 * total number of client connections: get by id and creates, the configurations in turns.
 * Needs Debian's pgbouncer (as root, it runs as the postgres user).
 */
const { spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const autocannon = require('autocannon');
const { Client } = require('pg');
const { seedBikes } = require('./seed');
const { bikeBody, freePort, median, sleep, startServer, table, tempWorkDir } = require('./support');

const ROOT = path.join(__dirname, '..');
const { startEmbeddedPostgres } = require(path.join(ROOT, 'dist', 'postgres', 'embedded-postgres.js'));
const { migrate } = require(path.join(ROOT, 'dist', 'db', 'migrate.js'));
const { serverUser } = require(path.join(ROOT, 'dist', 'postgres', 'server-user.js'));

const { values: args } = parseArgs({
  options: {
    count: { type: 'string', default: '20000' },
    duration: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '20' },
  },
});
const log = (message) => process.stderr.write(`[bench:scale] ${message}\n`);

/** PgBouncer in transaction mode in front of `url`'s database; as root, as the postgres user. */
async function startPgBouncer(url, dir) {
  const target = new URL(url);
  const database = target.pathname.slice(1);
  const port = await freePort();
  const user = serverUser();
  const file = (name, text) => {
    fs.writeFileSync(path.join(dir, name), text, { mode: 0o600 });
    if (user) fs.chownSync(path.join(dir, name), user.uid, user.gid);
    return path.join(dir, name);
  };
  const users = file(
    'users.txt',
    `"${decodeURIComponent(target.username)}" "${decodeURIComponent(target.password)}"\n`,
  );
  const ini = file(
    'pgbouncer.ini',
    `[databases]\n${database} = host=${target.hostname} port=${target.port} dbname=${database}\n[pgbouncer]\n` +
      `listen_addr = 127.0.0.1\nlisten_port = ${port}\nunix_socket_dir =\nauth_type = scram-sha-256\n` +
      `auth_file = ${users}\npool_mode = transaction\ndefault_pool_size = 20\nmax_client_conn = 1000\n` +
      'ignore_startup_parameters = extra_float_digits,options\nlogfile =\npidfile =\n',
  );
  const child = spawn('/usr/sbin/pgbouncer', [ini], { ...user, stdio: 'ignore' });
  const bouncer = new URL(url);
  bouncer.port = String(port);
  await sleep(500);
  return { url: bouncer.toString(), stop: () => child.kill('SIGTERM') };
}

/** Requests per second of `requests`, the connections shared out over the instances, all at once. */
async function load(instances, requests, duration) {
  const connections = Number(args.connections) / instances.length;
  const results = await Promise.all(
    instances.map((instance) => autocannon({ url: instance.baseUrl, connections, duration, requests })),
  );
  for (const result of results) {
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx, ${result.errors} errors`);
  }
  return results.reduce((sum, result) => sum + result.requests.total / result.duration, 0);
}

async function main() {
  if (!fs.existsSync('/usr/sbin/pgbouncer')) throw new Error('pgbouncer is not installed (apt-get install pgbouncer)');
  const workDir = tempWorkDir('bike-scale');
  const pg = await startEmbeddedPostgres({ dataDir: workDir });
  const stops = [];
  try {
    await migrate(pg.adminUrl);
    const client = new Client({ connectionString: pg.adminUrl });
    await client.connect();
    await seedBikes(client, Number(args.count));
    const { rows } = await client.query('SELECT id FROM bikes ORDER BY md5(id::text) LIMIT 200');
    await client.end();
    const bouncer = await startPgBouncer(pg.adminUrl, workDir);
    stops.push(bouncer.stop);
    const secret = randomBytes(32).toString('base64url');
    const service = (name, env) => startServer(name, ['dist/server.js'], { ...env, JWT_SECRET: secret }, workDir);
    const direct = await service('direct', { DATABASE_URL: pg.adminUrl });
    const pooled = [];
    for (let i = 0; i < 2; i++) {
      pooled.push(await service(`pooled-${i + 1}`, { DATABASE_URL: bouncer.url, DATABASE_DIRECT_URL: pg.adminUrl }));
    }
    stops.push(direct.stop, ...pooled.map((p) => p.stop));
    const { token } = await (await fetch(`${direct.baseUrl}/api/user`, { method: 'POST' })).json();

    const byId = rows.map((r) => ({ method: 'GET', path: `/bikes/${r.id}` }));
    const create = rows.map((_, i) => ({
      method: 'POST',
      path: '/bikes/',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(bikeBody(i)),
    }));
    const setups = [
      ['one instance, straight to PostgreSQL', [direct]],
      ['one instance, through PgBouncer', [pooled[0]]],
      ['two instances, through PgBouncer', pooled],
    ];
    const rowsOut = [['configuration', 'GET /bikes/:id req/s', 'POST /bikes/ req/s']];
    const results = setups.map(() => ({ byId: [], create: [] }));
    for (const [name, requests] of [
      ['byId', byId],
      ['create', create],
    ]) {
      for (const [, instances] of setups) await load(instances, requests, 1); // warm-up
      for (let round = 0; round < Number(args.rounds); round++) {
        for (const [i, [label, instances]] of setups.entries()) {
          log(`${name}: ${label}, round ${round + 1}`);
          results[i][name].push(await load(instances, requests, Number(args.duration)));
        }
      }
    }
    for (const [i, [label]] of setups.entries()) {
      rowsOut.push([label, median(results[i].byId).toFixed(0), median(results[i].create).toFixed(0)]);
    }
    console.log(
      `\nbench:scale: ${args.count} bikes, ${args.connections} client connections in all, ${args.rounds} rounds of ` +
        `${args.duration} s (median), nproc ${os.availableParallelism()}, Node ${process.version}\n\n` +
        table(rowsOut),
    );
  } finally {
    for (const stop of stops.reverse()) await stop();
    await sleep(1000);
    await pg.stop();
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
