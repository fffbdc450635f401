'use strict';

/**
 * A shop's storefront in the bench (issue 38's goals): a search page (`GET /bikes?q=`) and a facets
 * answer (`GET /bikes/facets`), each p95 <= 50 ms with requests sent one after another; and creates
 * with the storefront's indexes and words trigger against creates without them (>= 0.9). The words are
 * those of the seed's catalog (bench/seed.js): its types, vendors and description, with typos and
 * prefixes, some with filters and other sorts. And the search page's throughput against the plain
 * node:http + pg server (bench/baseline.js) sending the same statement (>= 0.75), in turns.
 */

const { Client } = require('pg');
const { cpuMicros, f0, f2, median, postgresCpuMicros, verdict } = require('./support');

const TARGETS = { p95Ms: 50, createsWithIndex: 0.9, searchOfBaseline: 0.75 };

const SEARCHES = [
  'q=gravel',
  'q=mountain+bike',
  'q=hydrolic+brakes',
  'q=sentra+cit',
  'q=velora+touring',
  'q=everyday+riding+gears',
  'q=bicycle&sort=price',
  'q=cargo&vendor=Apex&vendor=Cadence',
  'q=northwnd&inStock=true',
  'q=fat+bike&sort=-created&limit=48',
];

/** The searches by relevance alone, which bench/baseline.js answers too. */
const BASELINE_SEARCHES = SEARCHES.filter((q) => !q.includes('&')).map((q) => `/bikes?${q}&limit=24`);

const FACETS = [
  '',
  'vendor=Apex',
  'vendor=Apex&vendor=Velora&productType=Gravel',
  'q=gravel',
  'q=hydrolic+brakes&inStock=true',
  'currency=USD&minPrice=500&maxPrice=700&facets=vendor,productType',
  'q=sentra+cit&availableForSale=true',
];

/** The p95 of `paths` asked one after another, `times` each, in milliseconds. */
async function sequentialP95(baseUrl, paths, times) {
  const took = [];
  for (let round = 0; round < times; round++) {
    for (const path of paths) {
      const started = process.hrtime.bigint();
      const res = await fetch(`${baseUrl}${path}`);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
      took.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  }
  took.sort((a, b) => a - b);
  return { p50: took[Math.floor(took.length * 0.5)], p95: took[Math.floor(took.length * 0.95)], n: took.length };
}

/** Creates a second for `ms` milliseconds, by `connections` loops of POST /bikes/. */
async function createRate(baseUrl, token, ms, connections, bikeBody) {
  let made = 0;
  const until = Date.now() + ms;
  const loop = async (c) => {
    for (let i = 0; Date.now() < until; i++) {
      const res = await fetch(`${baseUrl}/bikes/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(bikeBody(c * 1_000_000 + i + Math.floor(Math.random() * 1e9))),
      });
      await res.arrayBuffer();
      if (res.status === 200) made++;
    }
  };
  await Promise.all(Array.from({ length: connections }, (_, c) => loop(c)));
  return made / (ms / 1000);
}

const WARM_UP_MS = 2_000;

const IDENTITY = { headers: { 'accept-encoding': 'identity' } };

/**
 * Requests a second for `ms` milliseconds, by `connections` loops of GET `paths` in turn, and the
 * CPU time the server's process and the whole PostgreSQL server (`backendPid`: any backend's)
 * spent per request answered (µs).
 */
async function readRate(server, paths, ms, connections, backendPid) {
  let answered = 0;
  const cpuBefore = cpuMicros(server.pid);
  const postgresBefore = postgresCpuMicros(backendPid);
  const until = Date.now() + ms;
  const loop = async (c) => {
    for (let i = c; Date.now() < until; i++) {
      // Unencoded, as every other load of the bench asks (autocannon sends no Accept-Encoding): the
      // baseline compresses nothing, and fetch would ask for gzip and unzip it on this machine's cores.
      const res = await fetch(`${server.baseUrl}${paths[i % paths.length]}`, IDENTITY);
      await res.arrayBuffer();
      if (res.status === 200) answered++;
    }
  };
  await Promise.all(Array.from({ length: connections }, (_, c) => loop(c)));
  return {
    rate: answered / (ms / 1000),
    cpu: (cpuMicros(server.pid) - cpuBefore) / answered,
    postgres: (postgresCpuMicros(backendPid) - postgresBefore) / answered,
  };
}

/** Whether the service and the baseline answer every search with the same bytes. */
async function sameAnswers(service, baseline) {
  for (const path of BASELINE_SEARCHES) {
    const [a, b] = await Promise.all(
      [service, baseline].map(async (server) =>
        Buffer.from(await (await fetch(`${server.baseUrl}${path}`)).arrayBuffer()),
      ),
    );
    if (!a.equals(b)) return false;
  }
  return true;
}

/**
 * What issue 38 adds to a create: the words' index and the facets' (besides the words trigger,
 * bikes_add_words_on_insert). The generated column search_words stays: dropping it rewrites the
 * table.
 */
const STOREFRONT_INDEXES = ['bikes_search_words', 'bikes_facets'];

/**
 * The reads: the search pages' and facets' latency one request at a time, and the search pages'
 * throughput beside the baseline's, in turns. On the catalog as seeded: a default run measures
 * them before any load writes (the goals are for a catalog of 100,000 bikes, and its write loads
 * add several times that).
 */
async function measureStorefrontReads({ service, baseline, rounds, duration, readConnections, backendPid, log }) {
  const times = 5;
  log(`storefront: ${SEARCHES.length} searches and ${FACETS.length} facets, one at a time, ${times} times`);
  for (const path of [...SEARCHES.map((q) => `/bikes?${q}`), ...FACETS.map((f) => `/bikes/facets?${f}`)]) {
    await (await fetch(`${service.baseUrl}${path}`)).arrayBuffer();
  }
  const search = await sequentialP95(
    service.baseUrl,
    SEARCHES.map((q) => `/bikes?${q}`),
    times,
  );
  const facets = await sequentialP95(
    service.baseUrl,
    FACETS.map((f) => `/bikes/facets?${f}`),
    times,
  );
  const same = await sameAnswers(service, baseline);
  const throughput = { service: [], baseline: [] };
  // A turn of WARM_UP_MS each first, unmeasured, as the bench's other loads have (its first turn
  // otherwise pays for the code's compilation and the statements' first plans).
  for (const server of [service, baseline]) {
    log(`storefront: search pages on ${server === service ? 'service' : 'baseline'}, warming up`);
    await readRate(server, BASELINE_SEARCHES, WARM_UP_MS, readConnections, backendPid);
  }
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? ['service', 'baseline'] : ['baseline', 'service'];
    for (const name of order) {
      log(`storefront: search pages on ${name}, round ${round + 1} of ${rounds}`);
      const server = name === 'service' ? service : baseline;
      throughput[name].push(await readRate(server, BASELINE_SEARCHES, duration * 1000, readConnections, backendPid));
    }
  }
  return { search, facets, throughput: { ...throughput, same, connections: readConnections } };
}

/**
 * Creates with and without the storefront's indexes and trigger (dropped and made again by
 * `adminUrl`'s role), in turns.
 */
async function measureStorefrontCreates({ service, token, adminUrl, rounds, duration, connections, bikeBody, log }) {
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  const creates = { with: [], without: [] };
  try {
    const indexes = (
      await admin.query(`SELECT indexdef FROM pg_indexes WHERE indexname = ANY ($1)`, [STOREFRONT_INDEXES])
    ).rows.map((row) => row.indexdef);
    for (let round = 0; round < rounds; round++) {
      log(`storefront: creates with the storefront's indexes, round ${round + 1} of ${rounds}`);
      creates.with.push(await createRate(service.baseUrl, token, duration * 1000, connections, bikeBody));
      for (const name of STOREFRONT_INDEXES) await admin.query(`DROP INDEX ${name}`);
      await admin.query('ALTER TABLE bikes DISABLE TRIGGER bikes_add_words_on_insert');
      try {
        log(`storefront: creates without it, round ${round + 1} of ${rounds}`);
        creates.without.push(await createRate(service.baseUrl, token, duration * 1000, connections, bikeBody));
      } finally {
        for (const index of indexes) await admin.query(index);
        await admin.query('ALTER TABLE bikes ENABLE ALWAYS TRIGGER bikes_add_words_on_insert');
      }
    }
  } finally {
    await admin.end();
  }
  return creates;
}

/** The lines of what measureStorefrontReads and measureStorefrontCreates measured, and the goals met or missed. */
function storefrontReport({ search, facets, throughput }, creates) {
  const ratios = creates.with.map((rate, i) => rate / creates.without[i]);
  const ratio = median(ratios);
  const searchRatios = throughput.service.map(({ rate }, i) => rate / throughput.baseline[i].rate);
  const rates = (turns) => turns.map(({ rate }) => f0(rate)).join(', ');
  const cpu = (turns) =>
    `CPU ${f0(median(turns.map((turn) => turn.cpu)))} µs/request, PostgreSQL's ${f0(median(turns.map((turn) => turn.postgres)))}`;
  const searchRatio = median(searchRatios);
  return [
    `search page (GET /bikes?q=, ${search.n} requests one at a time): p50 ${f2(search.p50)} ms, p95 ${f2(search.p95)} ms`,
    `facets (GET /bikes/facets, ${facets.n} requests one at a time): p50 ${f2(facets.p50)} ms, p95 ${f2(facets.p95)} ms`,
    `creates/s with the storefront's indexes (${STOREFRONT_INDEXES.join(', ')}) and words trigger: ${creates.with.map(f0).join(', ')}; without: ${creates.without
      .map(f0)
      .join(', ')}`,
    `goal: search page p95 <= ${TARGETS.p95Ms} ms: ${f2(search.p95)} ms: ${verdict(search.p95 <= TARGETS.p95Ms)}`,
    `goal: facets p95 <= ${TARGETS.p95Ms} ms: ${f2(facets.p95)} ms: ${verdict(facets.p95 <= TARGETS.p95Ms)}`,
    `goal: creates with the indexes >= ${TARGETS.createsWithIndex} of without: ${ratios.map(f2).join(', ')}: ${verdict(
      ratio >= TARGETS.createsWithIndex,
    )}`,
    `search pages by relevance (${BASELINE_SEARCHES.length} searches in turn, ${throughput.connections} connections), req/s: service ${rates(throughput.service)} (${cpu(
      throughput.service,
    )}); node:http + pg with the same statement ${rates(throughput.baseline)} (${cpu(throughput.baseline)}); same bytes: ${throughput.same ? 'yes' : 'NO'}`,
    `goal: search page throughput >= ${TARGETS.searchOfBaseline} of node:http + pg with the same SQL: ${searchRatios
      .map(f2)
      .join(', ')}: ${verdict(throughput.same && searchRatio >= TARGETS.searchOfBaseline)}`,
  ];
}

module.exports = { measureStorefrontCreates, measureStorefrontReads, storefrontReport };
