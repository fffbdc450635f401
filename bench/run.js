'use strict';

/**
 * npm run bench [-- options]
 *
 *   --count N              bikes seeded (default 100000)
 *   --duration S           seconds of each server's turn at each load (5)
 *   --rounds R             rounds; in each, every server takes one turn at a load, in an order
 *                          that rotates from round to round (3)
 *   --connections C        connections of the read loads (32)
 *   --write-connections C  connections of the write loads (16)
 *   --fetches F            timed fetches of /bikes/all from the service and the baseline (5)
 *   --quick                a first look in about 3 minutes: --count 10000 --duration 2 --rounds 1
 *                          --fetches 2 (options given beside it win)
 *   --no-peers             the service and the baseline only
 *   --cpu-prof             a CPU profile of the service, in a new $TMPDIR/bike-bench-profiles-XXXXXX the run names
 *   --explain              EXPLAIN (ANALYZE) of the service's read statements on the seeded table, no load
 *   --storefront           a shop's storefront alone (bench/storefront.js): search pages and facets
 *                          one at a time, creates with and without the search's index
 *   --writes               writes alone (bench/writes.js): where a create's database time goes, part
 *                          by part, on a scratch database; creates through the service with its
 *                          triggers on and off; creates, replaces and patches beside the Koa +
 *                          Prisma Client server (c)
 *
 * Starts an embedded PostgreSQL in a temporary directory, durable as users run it (fsync and
 * synchronous_commit on, checked), migrates it and seeds N bikes; then drives, over that one
 * database, the built service (node dist/server.js, so run `npm run build` first: `npm run bench`
 * does), the plain node:http + pg baseline (bench/baseline.js), minimal framework servers
 * (bench/minimal/) and servers that build the service's features from well-known libraries
 * (bench/equivalent/). Each load is given to every server that answers it, in turns, so that
 * figures compared were measured close in time. For each server and load it prints the
 * throughput as a ratio to the baseline's in the same round, and the CPU time the server process
 * spent per request answered (user + system, all its threads, from /proc/<pid>/stat): on a
 * shared machine throughput swings, CPU per request much less. Then /bikes/all (time, memory,
 * compression, conditional GETs), what the catalog version costs writers, pages of GET /bikes
 * (bench/browse.js), where a request's CPU goes, part by part, the service's beside the Koa
 * server's with the same features (GET by id and a page, each in a profiled turn: bench/parts.js),
 * where a create's database time goes, part by part, and creates with the triggers on and off
 * (bench/writes.js), the change feed (bench/feed.js), commit to event on another instance (bench/live.js), commit to
 * webhook and a subscription's throughput (bench/webhooks.js), and the
 * goals as met or missed. A default run takes about 12 minutes on 2 cores.
 */
const { createHash, randomBytes } = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const autocannon = require('autocannon');
const { Client } = require('pg');
const { browseReport, measureBrowse } = require('./browse');
const { measureFeed } = require('./feed');
const { liveReport, measureLive } = require('./live');
const { measureWebhooks, webhooksReport } = require('./webhooks');
const { measureParts } = require('./parts');
const { seedBikes } = require('./seed');
const { measureStorefrontCreates, measureStorefrontReads, storefrontReport } = require('./storefront');
const { measureTriggersThroughService, measureWrites, triggersReport, writesReport } = require('./writes');
const {
  PAST_THE_LIMITS,
  bikeBody,
  cpuMicros,
  f0,
  f2,
  median,
  onAndOff,
  perRound,
  sleep,
  startServer,
  table,
  tempWorkDir,
  verdict,
} = require('./support');

const ROOT = path.join(__dirname, '..');
const { startEmbeddedPostgres } = require(path.join(ROOT, 'dist', 'postgres', 'embedded-postgres.js'));
const { migrate } = require(path.join(ROOT, 'dist', 'db', 'migrate.js'));
const { statements, LIST_BATCH_SIZE } = require(path.join(ROOT, 'dist', 'bikes', 'repository.js'));

/** The goals (issue 25, and the earlier ones it kept). */
const TARGETS = {
  /** Time to the last byte of /bikes/all, at most this many times the baseline's. */
  allTime: 1.5,
  /** RSS while streaming /bikes/all, at most this many MB over the service's idle RSS. */
  allRssGrowthMb: 30,
  /** A conditional GET of /bikes/all answered 304, median under this many ms. */
  notModifiedMs: 2,
  compressedBytes: 0.15,
  compressedTime: 1.3,
  /** Creates with the catalog version's trigger, of creates without it. */
  versionCost: 0.9,
  /** A selective title search, of the baseline's throughput. */
  searchOfBaseline: 0.75,
  /** Replaces and patches, of the feature-equivalent Koa + Prisma Client server's throughput. */
  writesOfKoaPrisma: 0.9,
  /** Creates, of the same server's (issue 42). */
  createsOfKoaPrisma: 1.1,
};
/** The goals' catalog size; at another --count their figures are indications. */
const GOAL_COUNT = 100_000;
/** How many bikes of 100,000 the selective search terms match (about). */
const SEARCH_MATCHES_PER_100K = 94;

const READS = ['byId', 'byHandle', 'search'];
const WRITES = ['create', 'replace', 'patch'];
const EVERY_LOAD = [...READS, ...WRITES];
const SCENARIOS = [
  ['byId', 'GET /bikes/:id'],
  ['byHandle', 'GET /bikes/by-handle/:handle'],
  ['search', 'GET /bikes/search/by-title (selective)'],
  ['create', 'POST /bikes/ (create)'],
  ['replace', 'PUT /bikes/:id (replace)'],
  ['patch', 'PATCH /bikes/:id (one field)'],
];
const labelOf = Object.fromEntries(SCENARIOS);

/** The servers, all on the same database, and the loads each one answers. */
const SERVICE = { name: 'service', command: ['dist/server.js'], scenarios: EVERY_LOAD };
const BASELINE = { name: 'node:http + pg (baseline)', script: 'baseline.js', scenarios: EVERY_LOAD };
const KOA_FEATURES = { name: 'Koa + pg, features (a)', script: 'equivalent/koa-pg.js', scenarios: EVERY_LOAD };
/** The reads' peer (issue 42): a shop's plain statement, tagged by @koa/etag's hash of the body; the read goals are judged by it. */
const KOA_PLAIN = {
  name: 'Koa + pg, plain statement (d)',
  script: 'equivalent/koa-plain.js',
  scenarios: ['byId', 'byHandle'],
};
const FASTIFY_FEATURES = {
  name: 'Fastify + pg, features (b)',
  script: 'equivalent/fastify-pg.js',
  scenarios: EVERY_LOAD,
};
const KOA_PRISMA_FEATURES = {
  name: 'Koa + Prisma, features (c)',
  script: 'equivalent/koa-prisma.js',
  scenarios: WRITES,
};
const PEERS = [
  { name: 'Koa + pg, minimal', script: 'minimal/koa-pg.js', scenarios: ['byId', 'byHandle', 'create'] },
  { name: 'Koa + Prisma, minimal', script: 'minimal/koa-prisma.js', scenarios: ['byId', 'byHandle', 'create'] },
  { name: 'Fastify + pg, minimal', script: 'minimal/fastify-pg.js', scenarios: ['byId', 'byHandle', 'create'] },
  KOA_FEATURES,
  KOA_PLAIN,
  FASTIFY_FEATURES,
  KOA_PRISMA_FEATURES,
];
const LEGEND = `minimal: the framework, the SQL and the JSON, no logs and no checks (bench/minimal/)
(a) pino-http at info with X-Request-Id, koa-compress, koa-conditional-get + @koa/etag, @koa/cors, a prom-client histogram; writes: koa-bodyparser, yup, jsonwebtoken (bench/equivalent/koa-pg.js)
(b) Fastify's logger at info with request ids, @fastify/compress, @fastify/etag, @fastify/cors, a prom-client histogram; writes: Fastify's JSON Schema validation, jsonwebtoken (bench/equivalent/fastify-pg.js)
(c) Prisma Client 7 (create, upsert, update), pino-http, prom-client, koa-bodyparser, yup, jsonwebtoken (bench/equivalent/koa-prisma.js)
(d) the features of (a), its reads a plain parameterised statement (SELECT <columns> FROM bikes WHERE id = $1, no version columns) tagged by @koa/etag's hash of the body (bench/equivalent/koa-plain.js)`;

const { values: args } = parseArgs({
  // --no-peers (Node 20.16 and later).
  allowNegative: true,
  options: {
    count: { type: 'string' },
    duration: { type: 'string' },
    rounds: { type: 'string' },
    connections: { type: 'string', default: '32' },
    'write-connections': { type: 'string', default: '16' },
    fetches: { type: 'string' },
    quick: { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
    storefront: { type: 'boolean', default: false },
    writes: { type: 'boolean', default: false },
    peers: { type: 'boolean', default: true },
    explain: { type: 'boolean', default: false },
  },
});
/** An option's value: as given, else the quick run's, else the full run's. */
const option = (name, full, quick) => Number(args[name] ?? (args.quick ? quick : full));
const COUNT = option('count', 100_000, 10_000);
const DURATION = option('duration', 5, 2);
const ROUNDS = option('rounds', 3, 1);
const FETCHES = option('fetches', 5, 2);
const CONNECTIONS = Number(args.connections);
const WRITE_CONNECTIONS = Number(args['write-connections']);
const connectionsOf = (key) => (WRITES.includes(key) ? WRITE_CONNECTIONS : CONNECTIONS);

const log = (message) => process.stderr.write(`[bench] ${message}\n`);
const mb = (kb) => kb / 1024;
const f1 = (n) => n.toFixed(1);

/** VmRSS and VmHWM (peak) of a process, in kB. */
function memoryOf(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

/** Peak RSS of each process while `work` runs: VmHWM reset before (Linux clear_refs), and sampled every 20 ms. */
async function withRssSampling(pids, work) {
  const hwmWasReset = pids.map((pid) => {
    try {
      fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
      return true;
    } catch {
      return false;
    }
  });
  const peaks = pids.map((pid) => memoryOf(pid).rss);
  const sample = () =>
    pids.forEach((pid, i) => {
      try {
        peaks[i] = Math.max(peaks[i], memoryOf(pid).rss);
      } catch {
        // the process is gone; the caller will notice
      }
    });
  const timer = setInterval(sample, 20);
  try {
    await work();
    sample();
    return pids.map((pid, i) => Math.max(peaks[i], hwmWasReset[i] ? memoryOf(pid).hwm : 0));
  } finally {
    clearInterval(timer);
  }
}

/** One request; its answer's status, ETag, length, SHA-256, text (up to 64 kB) and time to its last byte. */
function request(url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = http.request(url, { method, headers }, (res) => {
      const hash = createHash('sha256');
      const kept = [];
      let bytes = 0;
      res.on('data', (chunk) => {
        hash.update(chunk);
        if (bytes < 65536) kept.push(chunk);
        bytes += chunk.length;
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode,
          etag: res.headers.etag,
          bytes,
          sha256: hash.digest('hex'),
          text: Buffer.concat(kept).toString('utf8'),
          ms: Number(process.hrtime.bigint() - started) / 1e6,
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const get = (url, headers = {}) => request(url, { headers });

function cannon(baseUrl, requests, duration, connections) {
  return autocannon({ url: baseUrl, connections, duration, requests });
}

/**
 * The loads' requests, the same for every server: 200 bikes' ids and handles, search terms that
 * match about 94 bikes of 100,000 each (a vendor and the first two hex digits of a title's tag,
 * which only that place in a title can hold), and write bodies; and one bike apart from them,
 * which the check of the answers writes.
 */
async function pickSamples(url) {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(`SELECT id, handle FROM bikes ORDER BY md5(id::text) LIMIT 201`);
    const { rows: terms } = await client.query(
      `SELECT vendor || ' ' || left(right(title, 10), 2) AS term, count(*)::int AS matches
         FROM bikes GROUP BY 1 ORDER BY abs(count(*) - $1::float), 1 LIMIT 50`,
      [(COUNT * SEARCH_MATCHES_PER_100K) / 100_000],
    );
    const read = (path) => ({ method: 'GET', path });
    const write = (method, path, body) => ({
      method,
      path,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const loaded = rows.slice(0, 200);
    const [apart] = rows.slice(200);
    return {
      requests: {
        byId: loaded.map((r) => read(`/bikes/${r.id}`)),
        byHandle: loaded.map((r) => read(`/bikes/by-handle/${encodeURIComponent(r.handle)}`)),
        search: terms.map((t) => read(`/bikes/search/by-title?query=${encodeURIComponent(t.term)}`)),
        create: loaded.map((_, i) => write('POST', '/bikes/', bikeBody(i))),
        replace: loaded.map((r, i) => write('PUT', `/bikes/${r.id}`, { ...bikeBody(i), id: r.id, handle: r.handle })),
        patch: loaded.map((r, i) => write('PATCH', `/bikes/${r.id}`, { totalInventory: i })),
      },
      /** The check's writes, in this order, to the bike apart. */
      checks: {
        create: write('POST', '/bikes/', bikeBody(0)),
        replace: write('PUT', `/bikes/${apart.id}`, { ...bikeBody(1), id: apart.id, handle: apart.handle }),
        patch: write('PATCH', `/bikes/${apart.id}`, { totalInventory: 7 }),
      },
      byId: `/bikes/${loaded[0].id}`,
      matchesPerSearch: terms.reduce((sum, t) => sum + t.matches, 0) / terms.length,
    };
  } finally {
    await client.end();
  }
}

/** The load `key` as sent: every request with the token (the service checks it on writes; readers ignore it). */
const loadOf = (samples, token, key) =>
  samples.requests[key].map((r) => ({ ...r, headers: { ...r.headers, authorization: `Bearer ${token}` } }));

/**
 * Whether each server answers as the baseline does, byte for byte: a read of each kind, and a
 * replace, a patch and a create (its new id set aside). A server that answers otherwise would be
 * measured doing something else. Returns the loads each server answered otherwise.
 */
async function checkAnswers(servers, samples, token) {
  const authorization = `Bearer ${token}`;
  const answers = new Map();
  for (const server of servers) {
    const mine = {};
    for (const key of server.scenarios) {
      if (!READS.includes(key)) continue;
      const { status, sha256 } = await get(`${server.baseUrl}${samples.requests[key][0].path}`);
      mine[key] = `${status} ${sha256}`;
    }
    for (const key of WRITES) {
      if (!server.scenarios.includes(key)) continue;
      const { method, path, headers, body } = samples.checks[key];
      const answer = await request(`${server.baseUrl}${path}`, {
        method,
        headers: { ...headers, authorization },
        body,
      });
      const id = answer.status === 200 && key === 'create' ? JSON.parse(answer.text).id : undefined;
      mine[key] = `${answer.status} ${id ? answer.text.replaceAll(id, '<new id>') : answer.text}`;
    }
    answers.set(server.name, mine);
  }
  const expected = answers.get(BASELINE.name);
  return new Map(
    servers.map((s) => [
      s.name,
      Object.keys(answers.get(s.name)).filter((k) => answers.get(s.name)[k] !== expected[k]),
    ]),
  );
}

function stillRunning(server) {
  if (!fs.existsSync(`/proc/${server.pid}`))
    throw new Error(`${server.name} has exited; its output ends:\n${server.output()}`);
}

/**
 * One server's turn at a load: its throughput, latency, peak RSS, and the CPU time its process
 * spent per request answered.
 */
async function turn(server, requests, connections) {
  stillRunning(server);
  const cpuBefore = cpuMicros(server.pid);
  let result;
  const [peakRss] = await withRssSampling([server.pid], async () => {
    result = await cannon(server.baseUrl, requests, DURATION, connections);
  });
  stillRunning(server);
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${server.name}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  }
  const cpu = cpuMicros(server.pid) - cpuBefore;
  return {
    requests: result.requests.total,
    rps: result.requests.total / result.duration,
    cpu: cpu / result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    peakRss,
  };
}

/**
 * The loads `keys`: every server that answers one warms up on it for a second, then, load by
 * load, each takes one turn per round, in an order that rotates from round to round. Returns each
 * load's turns, by server name.
 */
async function measureLoads(servers, samples, token, keys) {
  for (const key of keys) {
    const taking = servers.filter((s) => s.scenarios.includes(key));
    log(`${labelOf[key]}: warming up ${taking.length} servers`);
    for (const server of taking) await cannon(server.baseUrl, loadOf(samples, token, key), 1, connectionsOf(key));
  }
  const turns = {};
  for (const key of keys) {
    const taking = servers.filter((s) => s.scenarios.includes(key));
    const requests = loadOf(samples, token, key);
    turns[key] = new Map(taking.map((s) => [s.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const server of taking.map((_, i) => taking[(i + round) % taking.length])) {
        log(`${labelOf[key]}: ${server.name}, round ${round + 1} of ${ROUNDS}, ${DURATION} s`);
        turns[key].get(server.name).push(await turn(server, requests, connectionsOf(key)));
      }
    }
  }
  return turns;
}

/** A first page of GET /bikes, as the service and the Koa server (a) both answer it. */
const PAGE = [{ method: 'GET', path: '/bikes?limit=24' }];

/**
 * Where a request's CPU goes, GET by id and a page, the service's beside the Koa server's with
 * the same features (a), each in one profiled turn of its own (bench/parts.js): the table, under
 * a line that says what it shows and whether both answered the page alike.
 */
async function measureRequestParts(servers, byId, { serviceEnv, env, workDir, profileDir, backendPid }) {
  const [service] = servers;
  const koa = servers.find((s) => s.name === KOA_FEATURES.name);
  const pageBodies = await Promise.all([service, koa].filter(Boolean).map((s) => get(`${s.baseUrl}${PAGE[0].path}`)));
  const alike = pageBodies.every((answer) => answer.status === 200 && answer.sha256 === pageBodies[0].sha256);
  const rows = await measureParts({
    servers: [
      { name: SERVICE.name, command: SERVICE.command, env: serviceEnv },
      ...(koa ? [{ name: 'Koa (a)', command: [path.join(__dirname, KOA_FEATURES.script)], env }] : []),
    ],
    loads: { 'GET /bikes/:id': byId, 'page of 24': PAGE },
    workDir,
    profileDir,
    turn,
    cannon,
    connections: CONNECTIONS,
    backendPid,
    log,
  });
  return `Where a request's CPU goes: µs per request in one profiled turn of each (${CONNECTIONS} connections); the main thread's CPU shared out by its profile's samples, the process's other threads, and the whole PostgreSQL server's CPU during the turn${koa ? `; the page answered alike by both: ${alike ? 'yes' : 'NO'}` : ''}
${table(rows)}`;
}

/**
 * /bikes/all from the service and the baseline in turns (time and RSS), then from the service
 * alone plain, gzip and br in turns, and conditional GETs answered 304.
 */
async function measureAll(service, baseline, samples) {
  const pair = [service, baseline];
  // Idle RSS first, then the fetches in turns; the first fetch of each warms the code path up,
  // so it counts for memory but not for time.
  log(`/bikes/all: ${FETCHES + 1} fetches from each, in turns`);
  await sleep(1000);
  const idle = pair.map((s) => memoryOf(s.pid).rss);
  const runs = pair.map(() => []);
  const peaks = await withRssSampling(
    pair.map((s) => s.pid),
    async () => {
      for (let i = 0; i <= FETCHES; i++) {
        for (const which of i % 2 ? [1, 0] : [0, 1]) {
          const run = await get(`${pair[which].baseUrl}/bikes/all`);
          if (run.status !== 200) throw new Error(`${pair[which].name}: /bikes/all answered ${run.status}`);
          runs[which].push(run);
        }
      }
    },
  );
  const all = pair.map((_, i) => {
    const times = runs[i].slice(1).map((r) => r.ms);
    return {
      medianMs: median(times),
      bestMs: Math.min(...times),
      bytes: runs[i][0].bytes,
      sha256: runs[i][0].sha256,
      idleRss: idle[i],
      peakRss: peaks[i],
      growth: peaks[i] - idle[i],
    };
  });

  log(`/bikes/all compressed: ${FETCHES + 1} fetches per encoding, in turns`);
  const encodings = ['identity', 'gzip', 'br'];
  const encoded = Object.fromEntries(encodings.map((e) => [e, []]));
  for (let i = 0; i <= FETCHES; i++) {
    for (const encoding of i % 2 ? [...encodings].reverse() : encodings) {
      encoded[encoding].push(await get(`${service.baseUrl}/bikes/all`, { 'accept-encoding': encoding }));
    }
  }
  const compression = Object.fromEntries(
    encodings.map((e) => [e, { bytes: encoded[e][0].bytes, medianMs: median(encoded[e].slice(1).map((r) => r.ms)) }]),
  );

  log('conditional GETs: 200 of each, one at a time');
  const conditional = {};
  for (const [name, path] of [
    ['/bikes/all', '/bikes/all'],
    ['/bikes/:id', samples.byId],
  ]) {
    const { etag } = await get(`${service.baseUrl}${path}`);
    const times = [];
    for (let i = 0; i < 200; i++) {
      const run = await get(`${service.baseUrl}${path}`, { 'if-none-match': etag });
      if (run.status !== 304) throw new Error(`a conditional GET ${path} answered ${run.status}`);
      times.push(run.ms);
    }
    times.sort((a, b) => a - b);
    conditional[name] = { p50: times[100], p99: times[197] };
  }
  return { service: all[0], baseline: all[1], compression, conditional };
}

/**
 * What the catalog version costs writers: the service's creates with its trigger and without,
 * in turns, on the same process and database (docs/reference/caching-and-conditions.md#conditional-get).
 */
async function measureVersionCost(service, samples, token, setVersionTrigger) {
  const requests = loadOf(samples, token, 'create');
  return onAndOff({
    rounds: ROUNDS,
    set: setVersionTrigger,
    measure: async () => {
      const result = await cannon(service.baseUrl, requests, DURATION, WRITE_CONNECTIONS);
      return result.requests.total / result.duration;
    },
    log: (state, round) =>
      log(
        `POST /bikes/ ${state === 'on' ? 'with' : 'without'} the version trigger, round ${round + 1} of ${ROUNDS}, ${DURATION} s`,
      ),
  });
}

/**
 * Where a create's database time goes (on a scratch database in the same PostgreSQL), and the
 * service's creates with its triggers on and off: bench/writes.js's two tables, as text.
 */
async function measureWriteParts(service, samples, token, adminUrl) {
  const parts = await measureWrites({ adminUrl, rounds: ROUNDS, ms: 1000, connections: 8, log });
  const triggers = await measureTriggersThroughService({
    service,
    createLoad: loadOf(samples, token, 'create'),
    adminUrl,
    rounds: ROUNDS,
    connections: WRITE_CONNECTIONS,
    turn,
    log,
  });
  return `${writesReport(parts)}\n\n${triggersReport(triggers, WRITE_CONNECTIONS)}`;
}

/** `name`'s throughput over `to`'s at load `key`, round by round (both ran in each round). */
const ratiosOf = (turns, key, name, to) => {
  const mine = turns[key]?.get(name);
  const theirs = turns[key]?.get(to);
  return mine && theirs ? mine.map((t, i) => t.rps / theirs[i].rps) : undefined;
};
const medianOf = (values, field) => median(values.map((v) => v[field]));

/** Every server beside the baseline: throughput of its in the same round, and CPU µs per request. */
function serversTable(servers, turns, different) {
  const rows = [['server', ...SCENARIOS.map(([, label]) => label)]];
  for (const server of servers) {
    rows.push([
      different.get(server.name).length > 0
        ? `${server.name} (answers differ: ${different.get(server.name)})`
        : server.name,
      ...SCENARIOS.map(([key]) => {
        const ratios = ratiosOf(turns, key, server.name, BASELINE.name);
        if (!ratios) return '-';
        return `${f2(median(ratios))} / ${f0(medianOf(turns[key].get(server.name), 'cpu'))} µs`;
      }),
    ]);
  }
  return table(rows);
}

/** The service and the baseline, load by load, in detail. */
function serviceTable(turns, samples) {
  const rows = [
    [
      'scenario (connections)',
      'service req/s',
      'baseline req/s',
      'of baseline (per round)',
      'service CPU µs/req',
      'baseline CPU µs/req',
      'service p50/p99 ms',
      'baseline p50/p99 ms',
      'service peak RSS MB',
      'baseline peak RSS MB',
    ],
  ];
  for (const [key, label] of SCENARIOS) {
    const s = turns[key].get(SERVICE.name);
    const b = turns[key].get(BASELINE.name);
    rows.push([
      `${label}${key === 'search' ? `, ${f1(samples.matchesPerSearch)} matches` : ''} (${connectionsOf(key)})`,
      f0(medianOf(s, 'rps')),
      f0(medianOf(b, 'rps')),
      perRound(ratiosOf(turns, key, SERVICE.name, BASELINE.name)),
      f0(medianOf(s, 'cpu')),
      f0(medianOf(b, 'cpu')),
      `${medianOf(s, 'p50')} / ${medianOf(s, 'p99')}`,
      `${medianOf(b, 'p50')} / ${medianOf(b, 'p99')}`,
      f1(mb(Math.max(...s.map((t) => t.peakRss)))),
      f1(mb(Math.max(...b.map((t) => t.peakRss)))),
    ]);
  }
  return table(rows);
}

/** The /bikes/all tables: time and memory beside the baseline, compression, conditional GETs; and the version's cost. */
function allTables({ service: sa, baseline: ba, compression, conditional }, versionCost) {
  const timeRatio = sa.medianMs / ba.medianMs;
  const allRows = [
    ['GET /bikes/all', 'service', 'baseline', 'ratio', 'target'],
    [
      'time to last byte, median ms',
      f0(sa.medianMs),
      f0(ba.medianMs),
      f2(timeRatio),
      `<= ${TARGETS.allTime}: ${verdict(timeRatio <= TARGETS.allTime)}`,
    ],
    ['time to last byte, best ms', f0(sa.bestMs), f0(ba.bestMs), f2(sa.bestMs / ba.bestMs), ''],
    ['idle RSS MB (after the read loads)', f1(mb(sa.idleRss)), f1(mb(ba.idleRss)), '', ''],
    ['peak RSS MB during the fetches', f1(mb(sa.peakRss)), f1(mb(ba.peakRss)), '', ''],
    [
      'RSS growth MB',
      f1(mb(sa.growth)),
      f1(mb(ba.growth)),
      '',
      `< ${TARGETS.allRssGrowthMb} (service): ${verdict(mb(sa.growth) < TARGETS.allRssGrowthMb)}`,
    ],
  ];
  const plain = compression.identity;
  const compressionRows = [
    ['GET /bikes/all, service', 'MB on the wire', 'of plain', 'time to last byte, median ms', 'of plain', 'target'],
  ];
  for (const [encoding, c] of Object.entries(compression)) {
    const bytes = c.bytes / plain.bytes;
    const time = c.medianMs / plain.medianMs;
    const ok = bytes <= TARGETS.compressedBytes && time <= TARGETS.compressedTime;
    compressionRows.push([
      encoding,
      f1(c.bytes / 1e6),
      `${f1(100 * bytes)}%`,
      f0(c.medianMs),
      f2(time),
      encoding === 'identity'
        ? ''
        : `<= ${100 * TARGETS.compressedBytes}% and <= ${TARGETS.compressedTime}x: ${verdict(ok)}`,
    ]);
  }
  const conditionalRows = [['conditional GET, service, answered 304', 'p50 ms', 'p99 ms', 'target']];
  for (const [name, c] of Object.entries(conditional)) {
    conditionalRows.push([
      name,
      f2(c.p50),
      f2(c.p99),
      name === '/bikes/all' ? `median < ${TARGETS.notModifiedMs} ms: ${verdict(c.p50 < TARGETS.notModifiedMs)}` : '',
    ]);
  }
  const versionRatio = median(versionCost.ratios);
  const versionRows = [
    ['POST /bikes/, service', 'with the version trigger req/s', 'without req/s', 'ratio (per round)', 'target'],
    [
      'creates',
      f0(versionCost.on),
      f0(versionCost.off),
      perRound(versionCost.ratios),
      `>= ${TARGETS.versionCost}: ${verdict(versionRatio >= TARGETS.versionCost)}`,
    ],
  ];
  return [allRows, compressionRows, conditionalRows, versionRows].map(table).join('\n\n');
}

/** The goals of issue 25, each with its figures, met or missed. */
function goals(turns, all) {
  const lines = [];
  const atCount = COUNT === GOAL_COUNT ? '' : ` (at ${COUNT} bikes; the goal is at ${GOAL_COUNT})`;
  const cpu = (key, name) => medianOf(turns[key].get(name), 'cpu');
  for (const key of ['byId', 'byHandle']) {
    const label = labelOf[key];
    if (!turns[key].has(KOA_PLAIN.name)) {
      lines.push(`${label}: beside the plain-statement peer: not measured (--no-peers)`);
      continue;
    }
    const [mine, plain, koa] = [cpu(key, SERVICE.name), cpu(key, KOA_PLAIN.name), cpu(key, KOA_FEATURES.name)];
    const ofPlain = ratiosOf(turns, key, SERVICE.name, KOA_PLAIN.name);
    const ofKoa = ratiosOf(turns, key, SERVICE.name, KOA_FEATURES.name);
    const ofFastify = ratiosOf(turns, key, SERVICE.name, FASTIFY_FEATURES.name);
    lines.push(
      `${label}: CPU per request <= ${KOA_PLAIN.name}'s: ${f0(mine)} µs against ${f0(plain)}: ${verdict(mine <= plain)}`,
      `${label}: throughput >= ${KOA_PLAIN.name}'s: ${perRound(ofPlain)} of it: ${verdict(median(ofPlain) >= 1)}`,
      `${label}: beside ${KOA_FEATURES.name} (the service's statements): ${perRound(ofKoa)} of it, ${f0(mine)} µs against ${f0(koa)}`,
      `${label}: moonshot, throughput >= ${FASTIFY_FEATURES.name}'s: ${perRound(ofFastify)} of it: ${verdict(median(ofFastify) >= 1)}`,
    );
  }
  lines.push(...writeGoals(turns));
  const notModified = all.conditional['/bikes/all'].p50;
  lines.push(
    `conditional GET /bikes/all answered 304, median < ${TARGETS.notModifiedMs} ms: ${f2(notModified)} ms${atCount}: ${verdict(notModified < TARGETS.notModifiedMs)}`,
  );
  const growth = mb(all.service.growth);
  lines.push(
    `RSS streaming /bikes/all, within ${TARGETS.allRssGrowthMb} MB of idle: ${f1(mb(all.service.idleRss))} MB idle, +${f1(growth)} MB${atCount}: ${verdict(growth < TARGETS.allRssGrowthMb)}`,
  );
  const search = ratiosOf(turns, 'search', SERVICE.name, BASELINE.name);
  lines.push(
    `${labelOf.search}: throughput >= ${TARGETS.searchOfBaseline} of node:http + pg's: ${perRound(search)}: ${verdict(median(search) >= TARGETS.searchOfBaseline)}`,
  );
  return lines.join('\n');
}

/** The writes' goals beside the Koa + Prisma Client server (c), each with its figures and both servers' CPU per request. */
function writeGoals(turns) {
  return WRITES.map((key) => {
    const ratios = ratiosOf(turns, key, SERVICE.name, KOA_PRISMA_FEATURES.name);
    if (!ratios) return `${labelOf[key]}: beside ${KOA_PRISMA_FEATURES.name}: not measured (--no-peers)`;
    const target = key === 'create' ? TARGETS.createsOfKoaPrisma : TARGETS.writesOfKoaPrisma;
    const cpu = (name) => f0(medianOf(turns[key].get(name), 'cpu'));
    return `${labelOf[key]}: throughput >= ${target} of ${KOA_PRISMA_FEATURES.name}'s: ${perRound(ratios)} (CPU µs per request ${cpu(SERVICE.name)} against ${cpu(KOA_PRISMA_FEATURES.name)}): ${verdict(median(ratios) >= target)}`;
  });
}

function report({
  servers,
  turns,
  different,
  all,
  versionCost,
  browse,
  parts,
  writeParts,
  feed,
  live,
  webhooks,
  samples,
  durability,
}) {
  const pages = browseReport(browse, CONNECTIONS);
  const cpuModel = /^model name\s*:\s*(.*)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown';
  console.log(`
Bike catalog benchmark: ${COUNT} bikes; ${ROUNDS} rounds of ${DURATION} s per load and server, in turns; reads on ${CONNECTIONS} connections, writes on ${WRITE_CONNECTIONS}; /bikes/all fetched ${FETCHES} times each
PostgreSQL: ${durability}
Machine: nproc ${os.availableParallelism()}, ${cpuModel}, Node ${process.version}, ${os.platform()} ${os.release()}, load average ${os.loadavg().map(f2).join(' ')}
/bikes/all body: ${(all.service.bytes / 1e6).toFixed(1)} MB; selective search: ${f1(samples.matchesPerSearch)} matches per term on average
Every server answers as the baseline does, byte for byte: ${[...different.values()].every((d) => d.length === 0) ? 'yes' : 'NO (see the table)'}; /bikes/all too: ${all.service.sha256 === all.baseline.sha256 ? 'yes' : 'NO'}

Throughput of the baseline's in the same round (median of the rounds) / CPU µs per request answered (median), each server
${serversTable(servers, turns, different)}
${LEGEND}

${serviceTable(turns, samples)}

${allTables(all, versionCost)}

GET /bikes, the service's pages beside its GET by id, in turns
${pages.table}

${parts}

${writeParts}

${feed.tables}

${liveReport(live)}

${webhooksReport(webhooks)}

Goals
${goals(turns, all)}
${pages.goals.join('\n')}
${feed.goals}
`);
}

/** The plans PostgreSQL runs the service's read statements with, on the seeded table. */
async function explain(url) {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT id, handle, vendor || ' ' || left(right(title, 10), 2) AS term, (SELECT max(seq) / 2 FROM bikes)::text AS middle
         FROM bikes ORDER BY md5(id::text) LIMIT 1`,
    );
    const sample = rows[0];
    const start = '-9223372036854775808';
    const limit = LIST_BATCH_SIZE;
    const cases = [
      ['get by id', statements.byId, { id: sample.id }],
      ['get by handle', statements.firstByHandle, { handle: sample.handle }],
      ['/bikes/all, first batch', statements.batch, { after: start, limit }],
      ['/bikes/all, a batch half-way', statements.batch, { after: sample.middle, limit }],
      [
        `search, selective ("${sample.term}")`,
        statements.titleBatch,
        { pattern: `%${sample.term}%`, after: start, limit },
      ],
      [
        'search, broad ("Gravel", an eighth of the bikes)',
        statements.titleBatch,
        { pattern: '%Gravel%', after: start, limit },
      ],
    ];
    for (const [label, statement, values] of cases) {
      // The statement run as the service runs it, its values by name, under EXPLAIN.
      const plan = await statement.run(
        (text, params) => client.query(`EXPLAIN (ANALYZE, COSTS OFF) ${text}`, params),
        values,
      );
      console.log(`\n-- ${label}\n${statement.text}\n${plan.map((r) => r['QUERY PLAN']).join('\n')}`);
    }
  } finally {
    await client.end();
  }
}

/** What the measured database does with a commit: it must be what users run (no `ephemeral`). */
async function durabilityOf(client) {
  const settings = {};
  for (const name of ['fsync', 'synchronous_commit', 'full_page_writes']) {
    settings[name] = (await client.query(`SHOW ${name}`)).rows[0][name];
  }
  if (Object.values(settings).some((value) => value === 'off')) {
    throw new Error(
      `the bench's PostgreSQL is not durable (${JSON.stringify(settings)}): the figures would not be users'`,
    );
  }
  return `durable, as users run it (${Object.entries(settings)
    .map(([name, value]) => `${name} ${value}`)
    .join(', ')})`;
}

/** The servers' output of a run that failed, kept where it can be read after the run. */
function keepLogs(workDir) {
  const kept = fs.mkdtempSync(path.join(os.tmpdir(), 'bike-bench-logs-'));
  for (const name of fs.readdirSync(workDir).filter((file) => file.endsWith('.log'))) {
    fs.copyFileSync(path.join(workDir, name), path.join(kept, name));
  }
  log(`the servers' output is kept in ${kept}`);
}

async function main() {
  const workDir = tempWorkDir('bike-bench');
  log(`starting PostgreSQL in ${workDir}`);
  // Durable, as users run it: not `ephemeral` (fsync and synchronous_commit stay on).
  const pg = await startEmbeddedPostgres({ dataDir: workDir });
  let stopping = false;
  let finished = false;
  const cleanUp = async () => {
    if (stopping) return;
    stopping = true;
    await pg.stop();
    if (!finished) keepLogs(workDir);
    fs.rmSync(workDir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => cleanUp().then(() => process.exit(130)));
  try {
    await migrate(pg.adminUrl);
    log(`seeding ${COUNT} bikes`);
    const admin = new Client({ connectionString: pg.adminUrl });
    await admin.connect();
    try {
      await seedBikes(admin, COUNT);
      if (args.explain) {
        await explain(pg.adminUrl);
        finished = true;
        return;
      }
      const durability = await durabilityOf(admin);
      const samples = await pickSamples(pg.adminUrl);
      const setVersionTrigger = (enabled) =>
        admin.query(`ALTER TABLE bikes ${enabled ? 'ENABLE ALWAYS' : 'DISABLE'} TRIGGER bikes_version_on_insert`);
      const backendPid = (await admin.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      await measureAndReport(pg, workDir, samples, durability, setVersionTrigger, backendPid);
      finished = true;
    } finally {
      await admin.end();
    }
  } finally {
    await cleanUp();
  }
}

async function measureAndReport(pg, workDir, samples, durability, setVersionTrigger, backendPid) {
  const jwtSecret = randomBytes(32).toString('base64url');
  const env = { DATABASE_URL: pg.adminUrl, JWT_SECRET: jwtSecret, CORS_ORIGIN: 'https://shop.example.com' };
  // Kept after the run, in a directory of its own (0700): not at a fixed name in the shared /tmp.
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bike-bench-profiles-'));
  const servers = [];
  try {
    const serviceEnv = {
      ...env,
      LOG_LEVEL: 'info',
      ...PAST_THE_LIMITS,
    };
    const profile = args['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
    servers.push({
      ...SERVICE,
      ...(await startServer(SERVICE.name, [...profile, ...SERVICE.command], serviceEnv, workDir)),
    });
    // Writes alone: beside the baseline, the Koa + Prisma Client server (c) only.
    const peers = args.writes ? [KOA_PRISMA_FEATURES] : PEERS;
    for (const server of [BASELINE, ...(args.peers ? peers : [])]) {
      const started = await startServer(server.name, [path.join(__dirname, server.script)], env, workDir);
      servers.push({ ...server, ...started });
    }
    const [service, baseline] = servers;
    const { token } = await (await fetch(`${service.baseUrl}/api/user`, { method: 'POST' })).json();
    const storefrontSetting = {
      service,
      baseline,
      token,
      adminUrl: pg.adminUrl,
      rounds: ROUNDS,
      duration: DURATION,
      connections: Number(args['write-connections']),
      readConnections: Number(args.connections),
      backendPid,
      bikeBody,
      log,
    };
    // Its reads first, on the catalog as seeded (measureStorefrontReads).
    const storefrontReads = args.writes ? undefined : await measureStorefrontReads(storefrontSetting);
    const storefrontOf = async () =>
      storefrontReport(storefrontReads, await measureStorefrontCreates(storefrontSetting));
    if (args.storefront) {
      console.log(['', "## A shop's storefront", '', ...(await storefrontOf())].join('\n'));
      return;
    }

    log('checking that every server answers as the baseline does');
    const different = await checkAnswers(servers, samples, token);
    if (args.writes) {
      const turns = await measureLoads(servers, samples, token, WRITES);
      const writeParts = await measureWriteParts(service, samples, token, pg.adminUrl);
      const differ = [...different].filter(([, keys]) => keys.length > 0).map(([name, keys]) => `${name}: ${keys}`);
      console.log(
        ['', '## Writes', '', `Answers as the baseline's: ${differ.length ? `NO (${differ.join('; ')})` : 'yes'}`]
          .concat(['', serversTable(servers, turns, different), '', writeParts, '', ...writeGoals(turns)])
          .join('\n'),
      );
      return;
    }
    const turns = await measureLoads(servers, samples, token, READS);
    const byId = loadOf(samples, token, 'byId');
    const browse = await measureBrowse({
      service,
      byId,
      connections: CONNECTIONS,
      rounds: ROUNDS,
      duration: DURATION,
      turn,
      cannon,
      log,
    });
    const parts = await measureRequestParts(servers, byId, { serviceEnv, env, workDir, profileDir, backendPid });
    const all = await measureAll(service, baseline, samples);
    Object.assign(turns, await measureLoads(servers, samples, token, WRITES));
    const versionCost = await measureVersionCost(service, samples, token, setVersionTrigger);
    const writeParts = await measureWriteParts(service, samples, token, pg.adminUrl);
    const feed = await measureFeed(
      { service, token, serviceEnv, workDir, adminUrl: pg.adminUrl, createLoad: loadOf(samples, token, 'create') },
      { turn, cannon, log, connectionsOf, rounds: ROUNDS, duration: DURATION, quick: args.quick },
    );
    const live = await measureLive({ databaseUrl: pg.adminUrl, jwtSecret, workDir });
    const storefront = await storefrontOf();
    const webhooks = await measureWebhooks({ databaseUrl: pg.adminUrl, jwtSecret, workDir });
    report({
      servers,
      turns,
      different,
      all,
      versionCost,
      browse,
      parts,
      writeParts,
      feed,
      live,
      webhooks,
      samples,
      durability,
    });
    console.log(['', "## A shop's storefront", '', ...storefront].join('\n'));
  } catch (err) {
    // A server that stopped answering has usually exited: say which, and why it says it did.
    for (const server of servers) {
      if (!fs.existsSync(`/proc/${server.pid}`))
        log(`${server.name} exited during the run; its output ends:\n${server.output()}`);
    }
    throw err;
  } finally {
    for (const server of servers) await server.stop();
  }
  log(`CPU profiles written to ${profileDir}`);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
