'use strict';

/**
 * Two builds of the service on one PostgreSQL, in interleaved turns: where a regression is.
 *
 *   node bench/compare.js --old /path/to/older/worktree [--new .] [--count 10000] [--rounds 4]
 *        [--duration 5] [--connections 32] [--loads byId,byHandle,page,search] [--statements] [--profile]
 *        [--old-env NAME=value ...] [--new-env NAME=value ...] [--old-node='--flag ...'] [--new-node='--flag ...']
 *
 * Each build migrates and serves a database of its own in the one cluster (its own migrations,
 * the same seeded bikes), both built (`npm run build`) beforehand. For each load, in turns whose
 * order rotates from round to round, it prints each build's throughput, its node process's CPU µs
 * per request and PostgreSQL's (the whole server's, during that build's turn; from /proc, so
 * shared cores blur them less than throughput). With --statements, pg_stat_statements (loaded for the run) gives
 * each statement's calls, planning and execution time per request. With --profile, one more turn
 * of each under a CPU profile gives where its CPU went, by part (parts.js). --old and --new may be
 * the same worktree, run with different settings (--old-env DATABASE_PREPARED_STATEMENTS=off).
 */
const { randomBytes } = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const autocannon = require('autocannon');
const { Client } = require('pg');
const { seedBikes } = require('./seed');
const { HOOK, partsRows, profiledTurn } = require('./parts');
const {
  PAST_THE_LIMITS,
  cpuMicros,
  f0,
  f2,
  median,
  perRound,
  postgresCpuMicros,
  startServer,
  table,
  tempWorkDir,
} = require('./support');

const { values: args } = parseArgs({
  options: {
    old: { type: 'string' },
    new: { type: 'string', default: path.join(__dirname, '..') },
    count: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '4' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    loads: { type: 'string', default: 'byId,page' },
    statements: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    'old-env': { type: 'string', multiple: true, default: [] },
    'new-env': { type: 'string', multiple: true, default: [] },
    'old-node': { type: 'string', default: '' },
    'new-node': { type: 'string', default: '' },
  },
});
if (!args.old) throw new Error('--old <worktree> is required');
const BUILDS = [
  { name: 'old', root: path.resolve(args.old), database: 'bikes_old' },
  { name: 'new', root: path.resolve(args.new), database: 'bikes' },
];
const log = (message) => process.stderr.write(`[compare] ${message}\n`);

const LOADS = {
  byId: (bikes) => bikes.map((b) => ({ method: 'GET', path: `/bikes/${b.id}` })),
  byHandle: (bikes) => bikes.map((b) => ({ method: 'GET', path: `/bikes/by-handle/${encodeURIComponent(b.handle)}` })),
  page: () => [{ method: 'GET', path: '/bikes?limit=24' }],
  /** The spec's title search: 90 bikes of the seed's 100,000 (bench/seed.js), 1 of 10,000. */
  search: () => [{ method: 'GET', path: '/bikes/search/by-title?query=Velora%20bb' }],
};

async function turn(server, requests) {
  const node = cpuMicros(server.pid);
  const pg = postgresCpuMicros(server.backendPid);
  const result = await autocannon({
    url: server.baseUrl,
    connections: Number(args.connections),
    duration: Number(args.duration),
    requests,
  });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${server.name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  const n = result.requests.total;
  return {
    requests: n,
    rps: n / result.duration,
    cpu: (cpuMicros(server.pid) - node) / n,
    pg: (postgresCpuMicros(server.backendPid) - pg) / n,
  };
}

async function statementsOf(admin, database, n) {
  const { rows } = await admin.query(
    `SELECT calls, total_plan_time, total_exec_time, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS query
       FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)
       ORDER BY total_plan_time + total_exec_time DESC LIMIT 8`,
    [database],
  );
  return rows.map((r) => [
    database,
    f2(r.calls / n),
    f0((1000 * r.total_plan_time) / n),
    f0((1000 * r.total_exec_time) / n),
    r.query,
  ]);
}

async function main() {
  const workDir = tempWorkDir('bike-compare');
  const newDist = (file) => require(path.join(BUILDS[1].root, 'dist', ...file.split('/')));
  const { startEmbeddedPostgres } = newDist('postgres/embedded-postgres.js');
  let pg = await startEmbeddedPostgres({ dataDir: workDir });
  const servers = [];
  try {
    if (args.statements) {
      const admin = new Client({ connectionString: pg.adminUrl });
      await admin.connect();
      await admin.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);
      await admin.query(`ALTER SYSTEM SET pg_stat_statements.track_planning = on`);
      await admin.end();
      // The connection that holds the server in use is ended by the server as it stops.
      const ignoreShutdown = (err) => {
        if (err.code !== '57P01') throw err;
      };
      process.on('uncaughtException', ignoreShutdown);
      await pg.stop();
      pg = await startEmbeddedPostgres({ dataDir: workDir });
      process.off('uncaughtException', ignoreShutdown);
    }
    const admin = new Client({ connectionString: pg.adminUrl });
    // Stopping the server on a failure ends this connection too: the failure is the error to see.
    admin.on('error', () => {});
    await admin.connect();
    const backendPid = (await admin.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    await admin.query(`CREATE DATABASE bikes_old`);
    let bikes;
    for (const build of BUILDS) {
      const url = pg.adminUrl.replace(/\/bikes$/, `/${build.database}`);
      build.url = url;
      log(`${build.name}: migrating and seeding ${args.count} bikes`);
      await require(path.join(build.root, 'dist', 'db', 'migrate.js')).migrate(url);
      const client = new Client({ connectionString: url });
      await client.connect();
      await seedBikes(client, Number(args.count));
      if (args.statements) await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      bikes ??= (await client.query(`SELECT id, handle FROM bikes ORDER BY md5(id::text) LIMIT 200`)).rows;
      await client.end();
    }
    for (const build of BUILDS) {
      const env = {
        DATABASE_URL: build.url,
        JWT_SECRET: randomBytes(32).toString('base64url'),
        CORS_ORIGIN: 'https://shop.example.com',
        LOG_LEVEL: 'info',
        ...PAST_THE_LIMITS,
        DATA_DIR: path.join(workDir, `data-${build.name}`),
        ...Object.fromEntries(args[`${build.name}-env`].map((setting) => setting.split(/=(.*)/s).slice(0, 2))),
      };
      const hook = args.profile ? ['--require', HOOK] : [];
      env.BENCH_PROFILE = path.join(workDir, `profile-${build.name}`);
      const nodeArgs = args[`${build.name}-node`].split(' ').filter(Boolean);
      const server = await startServer(
        build.name,
        [...nodeArgs, ...hook, path.join(build.root, 'dist', 'server.js')],
        env,
        workDir,
      );
      servers.push({
        ...server,
        database: build.database,
        backendPid,
        profileBase: env.BENCH_PROFILE,
        profilesTaken: 0,
      });
      log(`${build.name}: listening on ${server.baseUrl}`);
    }
    const rounds = Number(args.rounds);
    const rows = [['load', 'build', 'req/s', 'of old (per round)', 'node CPU µs/req', 'PostgreSQL CPU µs/req']];
    const partTables = [];
    const statementRows = [['database', 'calls/req', 'plan µs/req', 'exec µs/req', 'statement']];
    for (const load of args.loads.split(',')) {
      const requests = LOADS[load](bikes);
      for (const server of servers) await autocannon({ url: server.baseUrl, connections: 8, duration: 1, requests });
      const turns = new Map(servers.map((s) => [s.name, []]));
      for (let round = 0; round < rounds; round++) {
        for (const server of servers.map((_, i) => servers[(i + round) % servers.length])) {
          if (args.statements) await admin.query('SELECT pg_stat_statements_reset()');
          const t = await turn(server, requests);
          turns.get(server.name).push(t);
          log(`${load} ${server.name} round ${round + 1}: ${f0(t.rps)} req/s, node ${f0(t.cpu)} µs, pg ${f0(t.pg)} µs`);
          if (args.statements && round === rounds - 1) {
            statementRows.push(...(await statementsOf(admin, server.database, t.requests)));
          }
        }
      }
      if (args.profile) {
        const columns = [];
        for (const server of servers) {
          const parts = await profiledTurn({
            server,
            requests,
            turn,
            backendPid: server.backendPid,
            profiles: server.profileBase,
          });
          columns.push({ label: `${load}, ${server.name}`, parts });
        }
        partTables.push(table(partsRows(columns)));
      }
      const old = turns.get('old');
      for (const server of servers) {
        const mine = turns.get(server.name);
        rows.push([
          load,
          server.name,
          f0(median(mine.map((t) => t.rps))),
          perRound(mine.map((t, i) => t.rps / old[i].rps)),
          f0(median(mine.map((t) => t.cpu))),
          f0(median(mine.map((t) => t.pg))),
        ]);
      }
    }
    await admin.end();
    console.log(
      `\n${args.count} bikes, ${rounds} rounds of ${args.duration} s, ${args.connections} connections; load average ${os.loadavg().map(f2).join(' ')}`,
    );
    console.log(table(rows));
    if (args.statements) console.log(`\n${table(statementRows)}`);
    for (const parts of partTables) console.log(`\n${parts}`);
  } finally {
    for (const server of servers) await server.stop();
    await pg.stop();
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
