'use strict';

/**
 * GET /bikes's pages in the bench (issue 26's goals): a page of 24 at any depth, any filter and
 * sort, p99 under 10 ms and at least half of GET by id's throughput. The service alone answers
 * these (no other server pages), so the comparison is with its own GET by id, in turns.
 *
 * Two loads, each a mix of sorts and filters: the first page of each, and a page deep in each
 * (the 1,001st unfiltered: after 24,000 bikes, or halfway through what a filter passes), reached
 * by following Link with pages of 250. Throughput and CPU per request at the read loads'
 * connections; latency (p50, p99) at one connection, a request at a time, so that it is a page's
 * time and not a queue's.
 */

const { f0, f2, median, perRound, table, verdict } = require('./support');

const SORTS = ['created', 'title', '-price', 'updatedAt'];
/** Filters of the seed's catalog (bench/seed.js): five vendors, eight types, every price in USD. */
const FILTERS = [
  {},
  { vendor: 'Apex' },
  { productType: 'Gravel' },
  { vendor: 'Velora', inStock: 'true' },
  { currency: 'USD', minPrice: '500', maxPrice: '700' },
  { availableForSale: 'false' },
];
const PAGE = 24;
/** The depth of the deep pages: the 1,001st page of 24, or half of what a filter passes if less. */
const DEEP = 1000 * PAGE;
const TARGETS = { p99Ms: 10, ofById: 0.5 };

const query = (params) => new URLSearchParams(params).toString();

/** The path of the page after `skip` bikes (as near as pages of 250 go) of `params`' pages. */
async function deepPath(baseUrl, params, skip) {
  let path = `/bikes?${query({ ...params, limit: '250' })}`;
  for (let skipped = 0; skipped + 250 <= skip; skipped += 250) {
    const res = await fetch(`${baseUrl}${path}`);
    await res.arrayBuffer();
    const link = res.headers.get('link');
    if (!link) return undefined;
    path = /^<([^>]+)>/.exec(link)[1];
  }
  const next = new URL(path, baseUrl);
  next.searchParams.set('limit', String(PAGE));
  return `${next.pathname}${next.search}`;
}

/** How many bikes pass `params`' filters: every page followed, 250 at a time. */
async function countOf(baseUrl, params) {
  let count = 0;
  for (let path = `/bikes?${query({ ...params, limit: '250' })}`; path;) {
    const res = await fetch(`${baseUrl}${path}`);
    count += (await res.json()).length;
    path = /^<([^>]+)>/.exec(res.headers.get('link') ?? '')?.[1];
  }
  return count;
}

/** The two loads' requests: the first page, and a deep one, of every sort with every filter. */
async function pageLoads(baseUrl, log) {
  const shallow = [];
  const deep = [];
  for (const filters of FILTERS) {
    const passing = Object.keys(filters).length === 0 ? Infinity : await countOf(baseUrl, filters);
    const skip = Math.min(DEEP, Math.floor(passing / 2));
    for (const sort of SORTS) {
      const params = { ...filters, sort };
      shallow.push({ method: 'GET', path: `/bikes?${query({ ...params, limit: String(PAGE) })}` });
      const path = await deepPath(baseUrl, params, skip);
      if (path) deep.push({ method: 'GET', path });
    }
    log(`GET /bikes: pages of ${JSON.stringify(filters)} found ${skip} bikes deep`);
  }
  return { shallow, deep };
}

/**
 * The loads in turns with GET by id, each round; then each alone at one connection for its
 * latency. `turn(server, requests, connections)` and `cannon` are the bench's (bench/run.js).
 */
async function measureBrowse({ service, byId, connections, rounds, duration, turn, cannon, log }) {
  const { shallow, deep } = await pageLoads(service.baseUrl, log);
  const loads = { 'GET /bikes, first page': shallow, 'GET /bikes, deep page': deep, 'GET /bikes/:id': byId };
  for (const requests of Object.values(loads)) await cannon(service.baseUrl, requests, 1, connections);
  const turns = Object.fromEntries(Object.keys(loads).map((name) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const name of Object.keys(loads)) {
      log(`${name}: round ${round + 1} of ${rounds}`);
      turns[name].push(await turn(service, loads[name], connections));
    }
  }
  const latency = {};
  for (const name of Object.keys(loads)) {
    log(`${name}: one connection, ${duration} s`);
    const result = await cannon(service.baseUrl, loads[name], duration, 1);
    latency[name] = { p50: result.latency.p50, p99: result.latency.p99 };
  }
  return { turns, latency, counts: { shallow: shallow.length, deep: deep.length } };
}

/** The table and the goals' lines of what measureBrowse measured. */
function browseReport({ turns, latency, counts }, connections) {
  const byId = turns['GET /bikes/:id'];
  const rows = [
    [
      `load (${connections} connections; latency at 1)`,
      'req/s',
      'of GET by id (per round)',
      'CPU µs/req',
      'p50 / p99 ms at 1 connection',
    ],
  ];
  const goals = [];
  for (const [name, runs] of Object.entries(turns)) {
    const ratios = runs.map((run, round) => run.rps / byId[round].rps);
    const { p50, p99 } = latency[name];
    rows.push([
      name === 'GET /bikes/:id' ? name : `${name} (${name.includes('deep') ? counts.deep : counts.shallow} kinds)`,
      f0(median(runs.map((run) => run.rps))),
      perRound(ratios),
      f0(median(runs.map((run) => run.cpu))),
      `${p50} / ${p99}`,
    ]);
    if (name === 'GET /bikes/:id') continue;
    goals.push(
      `${name}, any sort and filter: p99 < ${TARGETS.p99Ms} ms: ${p99} ms: ${verdict(p99 < TARGETS.p99Ms)}`,
      `${name}: throughput >= ${TARGETS.ofById} of GET by id's: ${f2(median(ratios))}: ${verdict(median(ratios) >= TARGETS.ofById)}`,
    );
  }
  return { table: table(rows), goals };
}

module.exports = { measureBrowse, browseReport };
