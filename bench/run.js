'use strict';

/**
 * npm run bench [-- --count 100000 --duration 5 --rounds 3 --connections 10 --fetches 5 --cpu-prof]
 * npm run bench -- --explain     EXPLAIN (ANALYZE) of each read statement on the seeded table, no load
 * npm run bench -- --no-peers    without the comparison with the minimal framework servers
 *
 * Starts an embedded PostgreSQL in a temporary directory, migrates and seeds it with N bikes,
 * then drives the built service (node dist/server.js) and the plain baseline (bench/baseline.js)
 * with the same load over the same database, taking turns, and prints throughput, latency, peak
 * RSS and the ratios between the two. Needs a current dist/ (npm run build does it).
 */
const { createHash, randomBytes } = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const autocannon = require('autocannon');
const { Client } = require('pg');
const { seedBikes } = require('./seed');
const { bikeBody, median, sleep, startServer, table, tempWorkDir } = require('./support');

const ROOT = path.join(__dirname, '..');
const { startEmbeddedPostgres } = require(path.join(ROOT, 'dist', 'postgres', 'embedded-postgres.js'));
const { migrate } = require(path.join(ROOT, 'dist', 'db', 'migrate.js'));
const { statements, LIST_BATCH_SIZE } = require(path.join(ROOT, 'dist', 'bikes', 'repository.js'));

const TARGETS = {
  allTime: 1.5,
  allRssGrowthMb: 60,
  notModifiedMs: 5,
  compressedBytes: 0.15,
  compressedTime: 1.3,
  versionCost: 0.9,
  /** GET by id and by handle, of plain node:http + pg. */
  readsOfNodeHttp: 0.85,
  /** Creates (through Prisma Client), of the minimal Koa + Prisma Client server's. */
  createsOfKoaPrisma: 0.9,
};

/**
 * The reference servers the service is compared with, all on the same database (bench/minimal/):
 * plain node:http + pg (the baseline, which all ratios are to), and minimal servers of the
 * frameworks, with no logging and no checks.
 */
const PEERS = [
  ['Koa + @koa/router + pg', 'minimal/koa-pg.js'],
  ['Koa + @koa/router + Prisma Client', 'minimal/koa-prisma.js'],
  ['Fastify + pg', 'minimal/fastify-pg.js'],
];
/** The peer comparison's loads, and their connections (reads, 32; creates, 16). */
const PEER_SCENARIOS = [
  ['byId', 'GET /bikes/:id', 32],
  ['byHandle', 'GET /bikes/by-handle/:handle', 32],
  ['create', 'POST /bikes/', 16],
];

const { values: args } = parseArgs({
  // --no-peers (Node 20.16 and later).
  allowNegative: true,
  options: {
    count: { type: 'string', default: '100000' },
    duration: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '10' },
    fetches: { type: 'string', default: '5' },
    'cpu-prof': { type: 'boolean', default: false },
    peers: { type: 'boolean', default: true },
    explain: { type: 'boolean', default: false },
  },
});
const COUNT = Number(args.count);
const DURATION = Number(args.duration);
const ROUNDS = Number(args.rounds);
const CONNECTIONS = Number(args.connections);
const FETCHES = Number(args.fetches);

const log = (message) => process.stderr.write(`[bench] ${message}\n`);
const mb = (kb) => kb / 1024;

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

function get(url, headers = {}) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    http
      .get(url, { headers }, (res) => {
        const hash = createHash('sha256');
        let bytes = 0;
        res.on('data', (chunk) => {
          hash.update(chunk);
          bytes += chunk.length;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode,
            etag: res.headers.etag,
            bytes,
            sha256: hash.digest('hex'),
            ms: Number(process.hrtime.bigint() - started) / 1e6,
          }),
        );
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

function cannon(baseUrl, requests, duration, connections = CONNECTIONS) {
  return autocannon({ url: baseUrl, connections, duration, requests });
}

/** Sample requests: the same ids, handles and search terms for both processes. */
async function pickSamples(url) {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT id, handle, right(title, 10) AS tag FROM bikes ORDER BY md5(id::text) LIMIT 200`,
    );
    const { rows: counts } = await client.query(
      `SELECT avg((SELECT count(*) FROM bikes b WHERE b.title LIKE '%' || s.tag || '%'))::float AS matches
         FROM (SELECT right(title, 10) AS tag FROM bikes ORDER BY md5(id::text) LIMIT 20) s`,
    );
    const read = (path) => ({ method: 'GET', path });
    const write = (method, path, body) => ({
      method,
      path,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return {
      requests: {
        byId: rows.map((r) => read(`/bikes/${r.id}`)),
        byHandle: rows.map((r) => read(`/bikes/by-handle/${encodeURIComponent(r.handle)}`)),
        search: rows.map((r) => read(`/bikes/search/by-title?query=${encodeURIComponent(r.tag)}`)),
        create: rows.map((_, i) => write('POST', '/bikes/', bikeBody(i))),
        replace: rows.map((r, i) => write('PUT', `/bikes/${r.id}`, { ...bikeBody(i), id: r.id, handle: r.handle })),
        patch: rows.map((r, i) => write('PATCH', `/bikes/${r.id}`, { totalInventory: i })),
      },
      byId: `/bikes/${rows[0].id}`,
      matchesPerSearch: counts[0].matches,
    };
  } finally {
    await client.end();
  }
}

/** Each scenario's load, for the service and the baseline in turns; `target` is the least ratio wanted. */
const SCENARIOS = [
  ['byId', 'GET /bikes/:id', 0.85],
  ['byHandle', 'GET /bikes/by-handle/:handle', 0.85],
  ['search', 'GET /bikes/search/by-title (selective)', 0.7],
  ['create', 'POST /bikes/ (create)', 0.7],
  ['replace', 'PUT /bikes/:id (replace)'],
  ['patch', 'PATCH /bikes/:id (one field)'],
];
const READS = ['byId', 'byHandle', 'search'];

/**
 * Both servers run side by side over the same database; they take turns, so the load each one
 * gets is measured close in time to the other's: shared machines drift, and ratios are what count.
 */
async function measure(servers, samples, token, setVersionTrigger) {
  const [service, baseline] = servers;
  const out = { service: { results: {}, check: {} }, baseline: { results: {}, check: {} } };
  // The service checks the token; the baseline ignores it.
  const load = (key) =>
    samples.requests[key].map((r) => ({ ...r, headers: { ...r.headers, authorization: `Bearer ${token}` } }));

  for (const server of servers) {
    log(`${server.name}: warming up`);
    for (const [key] of SCENARIOS) await cannon(server.baseUrl, load(key), 1);
    for (const key of READS)
      out[server.name].check[key] = (await get(`${server.baseUrl}${samples.requests[key][0].path}`)).sha256;
  }
  await sleep(1000);

  // /bikes/all: idle RSS first, then the fetches in turns; the first fetch of each warms the
  // code path up, so it counts for memory but not for time.
  log(`/bikes/all: ${FETCHES + 1} fetches from each, in turns`);
  const idle = Object.fromEntries(servers.map((s) => [s.name, memoryOf(s.pid).rss]));
  const runs = { service: [], baseline: [] };
  const peaks = await withRssSampling(
    servers.map((s) => s.pid),
    async () => {
      for (let i = 0; i <= FETCHES; i++) {
        for (const server of i % 2 ? [baseline, service] : servers) {
          const run = await get(`${server.baseUrl}/bikes/all`);
          if (run.status !== 200) throw new Error(`${server.name}: /bikes/all answered ${run.status}`);
          runs[server.name].push(run);
        }
      }
    },
  );
  for (const [i, server] of servers.entries()) {
    const times = runs[server.name].slice(1).map((r) => r.ms);
    out[server.name].all = {
      medianMs: median(times),
      bestMs: Math.min(...times),
      bytes: runs[server.name][0].bytes,
      sha256: runs[server.name][0].sha256,
      idleRss: idle[server.name],
      peakRss: peaks[i],
      growth: peaks[i] - idle[server.name],
    };
  }

  // The service alone: /bikes/all plain, gzip and br in turns, and conditional GETs.
  log(`/bikes/all compressed: ${FETCHES + 1} fetches per encoding, in turns`);
  const encodings = ['identity', 'gzip', 'br'];
  const encoded = Object.fromEntries(encodings.map((e) => [e, []]));
  for (let i = 0; i <= FETCHES; i++) {
    for (const encoding of i % 2 ? [...encodings].reverse() : encodings) {
      encoded[encoding].push(await get(`${service.baseUrl}/bikes/all`, { 'accept-encoding': encoding }));
    }
  }
  out.compression = Object.fromEntries(
    encodings.map((e) => [e, { bytes: encoded[e][0].bytes, medianMs: median(encoded[e].slice(1).map((r) => r.ms)) }]),
  );
  log('conditional GETs: 200 of each, one at a time');
  out.conditional = {};
  for (const [name, path] of [
    ['/bikes/all', '/bikes/all'],
    ['/bikes/:id', samples.byId],
  ]) {
    const etag = (await get(`${service.baseUrl}${path}`)).etag;
    const times = [];
    for (let i = 0; i < 200; i++) {
      const run = await get(`${service.baseUrl}${path}`, { 'if-none-match': etag });
      if (run.status !== 304) throw new Error(`a conditional GET ${path} answered ${run.status}`);
      times.push(run.ms);
    }
    times.sort((a, b) => a - b);
    out.conditional[name] = { p50: times[100], p99: times[197] };
  }

  for (const [key, label] of SCENARIOS) {
    const rounds = { service: [], baseline: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const server of round % 2 ? [baseline, service] : servers) {
        log(`${label}: ${server.name}, round ${round + 1} of ${ROUNDS}, ${DURATION} s`);
        const [peakRss] = await withRssSampling([server.pid], async () => {
          const result = await cannon(server.baseUrl, load(key), DURATION);
          if (result.non2xx > 0 || result.errors > 0) {
            throw new Error(`${server.name}: ${label}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
          }
          rounds[server.name].push({
            rps: result.requests.total / result.duration,
            p50: result.latency.p50,
            p99: result.latency.p99,
          });
        });
        rounds[server.name].at(-1).peakRss = peakRss;
      }
    }
    for (const server of servers) {
      const mine = rounds[server.name];
      out[server.name].results[key] = {
        rps: median(mine.map((r) => r.rps)),
        p50: median(mine.map((r) => r.p50)),
        p99: median(mine.map((r) => r.p99)),
        peakRss: Math.max(...mine.map((r) => r.peakRss)),
      };
    }
    out.service.results[key].ratios = rounds.service.map((r, i) => r.rps / rounds.baseline[i].rps);
  }

  // What the catalog version costs writers: the service's creates with its trigger and without,
  // in turns, on the same process and database (docs/decisions.md, rule 18).
  const creates = { with: [], without: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const trigger of round % 2 ? ['without', 'with'] : ['with', 'without']) {
      log(`POST /bikes/ ${trigger} the version trigger, round ${round + 1} of ${ROUNDS}, ${DURATION} s`);
      await setVersionTrigger(trigger === 'with');
      const result = await cannon(service.baseUrl, load('create'), DURATION);
      creates[trigger].push(result.requests.total / result.duration);
    }
  }
  await setVersionTrigger(true);
  out.versionCost = { with: median(creates.with), without: median(creates.without) };
  out.versionCost.ratios = creates.with.map((rps, i) => rps / creates.without[i]);
  return out;
}

/**
 * The service, the baseline and the minimal framework servers on GET by id, GET by handle and
 * creates: each round gives every server one turn, in an order that rotates from round to round.
 */
async function measurePeers(servers, samples, token) {
  const load = (key) =>
    samples.requests[key].map((r) => ({ ...r, headers: { ...r.headers, authorization: `Bearer ${token}` } }));
  const rps = Object.fromEntries(PEER_SCENARIOS.map(([key]) => [key, new Map(servers.map((s) => [s.name, []]))]));
  // The reads' bodies, to compare with the baseline's: a peer that answers differently measures something else.
  const answers = new Map();
  for (const server of servers) {
    log(`${server.name}: warming up`);
    for (const [key, , connections] of PEER_SCENARIOS) await cannon(server.baseUrl, load(key), 1, connections);
    const reads = await Promise.all(
      ['byId', 'byHandle'].map((key) => get(`${server.baseUrl}${samples.requests[key][0].path}`)),
    );
    answers.set(server.name, reads.map((r) => `${r.status} ${r.sha256}`).join(' '));
  }
  for (const [key, label, connections] of PEER_SCENARIOS) {
    for (let round = 0; round < ROUNDS; round++) {
      const order = servers.map((_, i) => servers[(i + round) % servers.length]);
      for (const server of order) {
        log(`peers, ${label}: ${server.name}, round ${round + 1} of ${ROUNDS}, ${DURATION} s`);
        const result = await cannon(server.baseUrl, load(key), DURATION, connections);
        if (result.non2xx > 0 || result.errors > 0) {
          throw new Error(`${server.name}: ${label}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
        }
        rps[key].get(server.name).push(result.requests.total / result.duration);
      }
    }
  }
  const different = servers.filter((s) => answers.get(s.name) !== answers.get('baseline')).map((s) => s.name);
  return { rps, different };
}

function reportPeers({ rps, different }) {
  const f2 = (n) => n.toFixed(2);
  const verdict = (ok) => (ok ? 'met' : 'MISSED');
  const names = [...rps.byId.keys()];
  /** A server's median ratio to another's, round by round (both ran in the same round). */
  const ratios = (key, name, to) => rps[key].get(name).map((value, i) => value / rps[key].get(to)[i]);
  const rows = [['server', ...PEER_SCENARIOS.map(([, label, c]) => `${label} (${c} conn.): req/s, of node:http`)]];
  for (const name of names) {
    rows.push([
      name,
      ...PEER_SCENARIOS.map(([key]) => {
        const r = ratios(key, name, 'baseline');
        return `${median(rps[key].get(name)).toFixed(0)}, ${f2(median(r))} (${r.map(f2).join(' ')})`;
      }),
    ]);
  }
  const byId = median(ratios('byId', 'service', 'baseline'));
  const byHandle = median(ratios('byHandle', 'service', 'baseline'));
  const creates = median(ratios('create', 'service', PEERS[1][0]));
  console.log(`
The service beside minimal servers, same database and load, in turns (ratios: median, then per round)
node:http is the baseline (bench/baseline.js); the others are in bench/minimal/
GET by id and by handle answered identically by all: ${different.length === 0 ? 'yes' : `NO (${different.join(', ')})`}

${table(rows)}

Goal: GET by id and by handle >= ${TARGETS.readsOfNodeHttp} of plain node:http: by id ${f2(byId)}, by handle ${f2(byHandle)}: ${verdict(Math.min(byId, byHandle) >= TARGETS.readsOfNodeHttp)}
Goal: creates (Prisma Client) >= ${TARGETS.createsOfKoaPrisma} of the minimal Koa + Prisma Client server: ${f2(creates)}: ${verdict(creates >= TARGETS.createsOfKoaPrisma)}
`);
}

function report({ service, baseline, compression, conditional, versionCost }, samples) {
  const f0 = (n) => n.toFixed(0);
  const f1 = (n) => n.toFixed(1);
  const f2 = (n) => n.toFixed(2);
  const verdict = (ok) => (ok ? 'met' : 'MISSED');
  const rows = [
    [
      'scenario',
      'service req/s',
      'baseline req/s',
      'ratio (per round)',
      'service p50/p99 ms',
      'baseline p50/p99 ms',
      'service peak RSS MB',
      'baseline peak RSS MB',
      'target',
    ],
  ];
  for (const [key, label, target] of SCENARIOS) {
    const s = service.results[key];
    const b = baseline.results[key];
    const ratio = median(s.ratios);
    rows.push([
      label,
      f0(s.rps),
      f0(b.rps),
      `${f2(ratio)} (${s.ratios.map(f2).join(' ')})`,
      `${s.p50} / ${s.p99}`,
      `${b.p50} / ${b.p99}`,
      f1(mb(s.peakRss)),
      f1(mb(b.peakRss)),
      target ? `>= ${target}: ${verdict(ratio >= target)}` : 'none',
    ]);
  }
  const sa = service.all;
  const ba = baseline.all;
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
    ['idle RSS MB (after warm-up)', f1(mb(sa.idleRss)), f1(mb(ba.idleRss)), '', ''],
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
    [
      'GET /bikes/all, service',
      'MB on the wire',
      'of plain',
      'time to last byte, median ms',
      'of plain',
      'at 100 Mbit/s s',
      'target',
    ],
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
      f2((c.bytes * 8) / 1e8),
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
      name === '/bikes/all' ? `< ${TARGETS.notModifiedMs} ms: ${verdict(c.p50 < TARGETS.notModifiedMs)}` : '',
    ]);
  }
  const versionRatio = median(versionCost.ratios);
  const versionRows = [
    ['POST /bikes/, service', 'with the version trigger req/s', 'without req/s', 'ratio (per round)', 'target'],
    [
      'creates',
      f0(versionCost.with),
      f0(versionCost.without),
      `${f2(versionRatio)} (${versionCost.ratios.map(f2).join(' ')})`,
      `>= ${TARGETS.versionCost}: ${verdict(versionRatio >= TARGETS.versionCost)}`,
    ],
  ];
  const same = sa.sha256 === ba.sha256 && READS.every((key) => service.check[key] === baseline.check[key]);
  const cpu = /^model name\s*:\s*(.*)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown';
  console.log(`
Bike catalog benchmark: ${COUNT} bikes, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION} s per scenario and server (in turns), /bikes/all fetched ${FETCHES} times each
PostgreSQL: durable, as users run it (fsync on, synchronous_commit on)
Machine: nproc ${os.availableParallelism()}, ${cpu}, Node ${process.version}, ${os.platform()} ${os.release()}, load average ${os.loadavg().map(f2).join(' ')}
/bikes/all body: ${(sa.bytes / 1e6).toFixed(1)} MB; selective search: ${samples.matchesPerSearch.toFixed(1)} matches per term on average
Service and baseline answered identically: ${same ? 'yes' : 'NO'}

${table(rows)}

${table(allRows)}

${table(compressionRows)}

${table(conditionalRows)}

${table(versionRows)}
`);
}

/** The plans PostgreSQL runs the service's read statements with, on the seeded table. */
async function explain(url) {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT id, handle, right(title, 10) AS tag, (SELECT max(seq) / 2 FROM bikes)::text AS middle
         FROM bikes ORDER BY md5(id::text) LIMIT 1`,
    );
    const sample = rows[0];
    const start = '-9223372036854775808';
    const cases = [
      ['get by id', statements.byId.text, [sample.id]],
      ['get by handle', statements.firstByHandle.text, [sample.handle]],
      ['/bikes/all, first batch', statements.batch.text, [start, LIST_BATCH_SIZE]],
      ['/bikes/all, a batch half-way', statements.batch.text, [sample.middle, LIST_BATCH_SIZE]],
      [`search, selective ("${sample.tag}")`, statements.titleBatch.text, [`%${sample.tag}%`, start, LIST_BATCH_SIZE]],
      [
        'search, broad ("Gravel", an eighth of the bikes)',
        statements.titleBatch.text,
        ['%Gravel%', start, LIST_BATCH_SIZE],
      ],
    ];
    for (const [label, text, params] of cases) {
      const plan = await client.query(`EXPLAIN (ANALYZE, COSTS OFF) ${text}`, params);
      console.log(`\n-- ${label}\n${text}\n${plan.rows.map((r) => r['QUERY PLAN']).join('\n')}`);
    }
  } finally {
    await client.end();
  }
}

async function main() {
  const workDir = tempWorkDir('bike-bench');
  log(`starting PostgreSQL in ${workDir}`);
  // Durable, as users run it: fsync and synchronous_commit on.
  const pg = await startEmbeddedPostgres({ dataDir: workDir });
  let stopping = false;
  const cleanUp = async () => {
    if (stopping) return;
    stopping = true;
    await pg.stop();
    fs.rmSync(workDir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => cleanUp().then(() => process.exit(130)));
  try {
    await migrate(pg.adminUrl);
    log(`seeding ${COUNT} bikes`);
    const client = new Client({ connectionString: pg.adminUrl });
    await client.connect();
    await seedBikes(client, COUNT).finally(() => client.end());
    if (args.explain) {
      await explain(pg.adminUrl);
      return;
    }
    const samples = await pickSamples(pg.adminUrl);

    const profileDir = path.join(os.tmpdir(), 'bike-bench-profiles');
    const servers = [];
    try {
      servers.push(
        await startServer(
          'service',
          [...(args['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), 'dist/server.js'],
          { DATABASE_URL: pg.adminUrl, JWT_SECRET: randomBytes(32).toString('base64url'), LOG_LEVEL: 'info' },
          workDir,
        ),
      );
      servers.push(
        await startServer('baseline', [path.join(__dirname, 'baseline.js')], { DATABASE_URL: pg.adminUrl }, workDir),
      );
      const peers = [];
      if (args.peers) {
        for (const [name, script] of PEERS) {
          peers.push(await startServer(name, [path.join(__dirname, script)], { DATABASE_URL: pg.adminUrl }, workDir));
        }
      }
      servers.push(...peers);
      const issued = await fetch(`${servers[0].baseUrl}/api/user`, { method: 'POST' });
      const { token } = await issued.json();
      const admin = new Client({ connectionString: pg.adminUrl });
      await admin.connect();
      const setVersionTrigger = (enabled) =>
        admin.query(`ALTER TABLE bikes ${enabled ? 'ENABLE ALWAYS' : 'DISABLE'} TRIGGER bikes_version_on_insert`);
      try {
        report(await measure(servers.slice(0, 2), samples, token, setVersionTrigger), samples);
        if (args.peers) reportPeers(await measurePeers(servers, samples, token));
      } finally {
        await admin.end();
      }
    } finally {
      for (const server of servers) await server.stop();
    }
    if (args['cpu-prof']) log(`CPU profile of the service written to ${profileDir}`);
  } finally {
    await cleanUp();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
