'use strict';

/**
 * npm run bench:cache [-- --count 10000 --duration 5 --rounds 3 --connections 32]
 *
 * The read cache (docs/reference/database.md#the-read-cache) on two instances of one database,
 * as behind a load balancer: two with READ_CACHE_ENTRIES and two without, all four running, the
 * pairs taking turns at each load, the connections shared between the pair's two instances. For
 * GET by id (200 bikes) and a first page of GET /bikes, the pair's throughput, its node CPU per
 * request (both processes), and PostgreSQL's CPU per request (the whole server: the postmaster and
 * every process it runs, /proc/<pid>/stat); the idle pair's polls count in it too. Then a
 * conditional GET of /bikes/all answered 304, one at a time, through each.
 */
const { parseArgs } = require('node:util');
const autocannon = require('autocannon');
const { Client } = require('pg');
const { seedBikes } = require('./seed');
const { cpuMicros, f0, f2, median, postgresCpuMicros, runAlone, sleep, startServer, table } = require('./support');

const { values: args } = parseArgs({
  options: {
    count: { type: 'string', default: '10000' },
    duration: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' },
  },
});
const [COUNT, DURATION, ROUNDS, CONNECTIONS] = ['count', 'duration', 'rounds', 'connections'].map((k) =>
  Number(args[k]),
);
const log = (message) => process.stderr.write(`[bench:cache] ${message}\n`);

const PAIRS = [
  { name: 'without the cache', entries: '0' },
  { name: 'with the cache', entries: '20000' },
];

/** Both instances of a pair under the load at once, half the connections each. */
async function pairTurn(pair, requests, backendPid) {
  const before = { node: pair.servers.map((s) => cpuMicros(s.pid)), pg: postgresCpuMicros(backendPid) };
  const results = await Promise.all(
    pair.servers.map((s) => autocannon({ url: s.baseUrl, connections: CONNECTIONS / 2, duration: DURATION, requests })),
  );
  const node = pair.servers.reduce((sum, s, i) => sum + cpuMicros(s.pid) - before.node[i], 0);
  const pg = postgresCpuMicros(backendPid) - before.pg;
  const total = results.reduce((sum, r) => sum + r.requests.total, 0);
  const bad = results.reduce((sum, r) => sum + r.non2xx + r.errors, 0);
  if (bad > 0) throw new Error(`${pair.name}: ${bad} answers not 2xx`);
  return {
    rps: results.reduce((sum, r) => sum + r.requests.total / r.duration, 0),
    node: node / total,
    pg: pg / total,
  };
}

async function measure({ databaseUrl, jwtSecret, workDir }) {
  const admin = new Client({ connectionString: databaseUrl });
  await admin.connect();
  const pairs = [];
  try {
    log(`seeding ${COUNT} bikes`);
    await seedBikes(admin, COUNT);
    const { rows } = await admin.query('SELECT id FROM bikes ORDER BY md5(id::text) LIMIT 200');
    const backendPid = (await admin.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    for (const { name, entries } of PAIRS) {
      const env = { DATABASE_URL: databaseUrl, JWT_SECRET: jwtSecret, LOG_LEVEL: 'info', READ_CACHE_ENTRIES: entries };
      const servers = [];
      for (const i of [1, 2]) servers.push(await startServer(`${name} ${i}`, ['dist/server.js'], env, workDir));
      pairs.push({ name, servers });
    }
    const loads = {
      'GET /bikes/:id': rows.map((r) => ({ method: 'GET', path: `/bikes/${r.id}` })),
      'GET /bikes?limit=24': [{ method: 'GET', path: '/bikes?limit=24' }],
    };
    const turns = {};
    for (const [load, requests] of Object.entries(loads)) {
      for (const pair of pairs) await pairTurn(pair, requests, backendPid); // a warm-up turn each
      turns[load] = new Map(pairs.map((p) => [p.name, []]));
      for (let round = 0; round < ROUNDS; round++) {
        for (const pair of round % 2 ? [...pairs].reverse() : pairs) {
          log(`${load}: ${pair.name}, round ${round + 1} of ${ROUNDS}`);
          turns[load].get(pair.name).push(await pairTurn(pair, requests, backendPid));
        }
      }
    }
    log('conditional GET /bikes/all: 200 through each pair, one at a time');
    const notModified = {};
    for (const pair of pairs) {
      const url = `${pair.servers[0].baseUrl}/bikes/all`;
      const first = await fetch(url);
      const tag = first.headers.get('etag');
      await first.arrayBuffer();
      await sleep(200);
      const times = [];
      for (let i = 0; i < 200; i++) {
        const started = process.hrtime.bigint();
        const res = await fetch(url, { headers: { 'if-none-match': tag } });
        await res.arrayBuffer();
        if (res.status !== 304) throw new Error(`${pair.name}: a conditional /bikes/all answered ${res.status}`);
        times.push(Number(process.hrtime.bigint() - started) / 1e6);
      }
      times.sort((a, b) => a - b);
      notModified[pair.name] = { p50: times[100], p99: times[197] };
    }
    return { turns, notModified };
  } finally {
    for (const pair of pairs) for (const server of pair.servers) await server.stop();
    await admin.end();
  }
}

function report({ turns, notModified }) {
  const [off, on] = PAIRS.map((p) => p.name);
  const rows = [
    [
      `two instances, ${CONNECTIONS} connections`,
      'req/s without',
      'req/s with',
      'of without (per round)',
      'node µs/req without / with',
      'PostgreSQL µs/req without / with',
    ],
  ];
  for (const [load, byPair] of Object.entries(turns)) {
    const [a, b] = [byPair.get(off), byPair.get(on)];
    const ratios = b.map((t, i) => t.rps / a[i].rps);
    const m = (turnsOf, field) => median(turnsOf.map((t) => t[field]));
    rows.push([
      load,
      f0(m(a, 'rps')),
      f0(m(b, 'rps')),
      `${f2(median(ratios))} (${ratios.map(f2).join(', ')})`,
      `${f0(m(a, 'node'))} / ${f0(m(b, 'node'))}`,
      `${f0(m(a, 'pg'))} / ${f0(m(b, 'pg'))}`,
    ]);
  }
  const conditional = [
    ['conditional GET /bikes/all, 304', 'p50 ms', 'p99 ms'],
    ...Object.entries(notModified).map(([name, t]) => [name, f2(t.p50), f2(t.p99)]),
  ];
  return `
The read cache: ${COUNT} bikes, ${ROUNDS} rounds of ${DURATION} s per load and pair, in turns (bench/cache.js)
${table(rows)}

${table(conditional)}`;
}

runAlone('cache', measure, report);
