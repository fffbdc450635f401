'use strict';

/**
 * Commit to event on the other instance (docs/reference/browse-and-sync.md#one-poll-per-instance): two instances
 * of the built service on one database, event streams open on instance B, creates written through
 * instance A; for each create and each stream, the time from the create's 200 to its event on the
 * stream. With one stream, then with many (one poll of B's serves them all). Also what a poll of a
 * log with nothing new costs, and B's memory per open stream. Goal: p99 under 250 ms.
 *
 *   node bench/live.js [--writes N] [--streams 1,500]   (after `npm run build`) on an embedded
 *                                                         PostgreSQL of its own
 *
 * bench/run.js calls measureLive with its own database, and prints liveReport.
 */
const http = require('node:http');
const { randomUUID } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { Client } = require('pg');
const { PAST_THE_LIMITS, bikeBody, median, runAlone, sleep, startServer, table, verdict } = require('./support');

const ROOT = path.join(__dirname, '..');

/** The goal: from a write's 200 to its event on a stream of another instance, p99 under this. */
const GOAL_P99_MS = 250;
/** The live feed's poll period (src/feed/live.ts). */
const { POLL_MS } = require(path.join(ROOT, 'dist', 'feed', 'live.js'));
/** How long a write's event may take before the run fails. */
const EVENT_TIMEOUT_MS = 10_000;

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const f1 = (n) => n.toFixed(1);

/** VmRSS of a process, in kB. */
const rssOf = (pid) => Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

/** The bike's id in an event's data: the change's `id`, after its cursor and type. */
const ID_IN_DATA = /"id":"([0-9a-f-]{36})"/;

/**
 * An event stream of `url`: calls `onEvent(id of the change's bike, when)` for each event as its
 * bytes arrive. Resolves once the stream's first line (its retry hint) has come. It reads as little
 * as it can: this process reads every stream, on the machine the servers run on.
 */
function openStream(url, onEvent) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { accept: 'text/event-stream' }, agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      res.setEncoding('utf8');
      let buffered = '';
      let started = false;
      res.on('data', (chunk) => {
        const when = performance.now();
        buffered += chunk;
        const blocks = buffered.split('\n\n');
        buffered = blocks.pop();
        for (const block of blocks) {
          const id = ID_IN_DATA.exec(block)?.[1];
          if (id) onEvent(id, when);
        }
        if (!started) {
          started = true;
          resolve({ close: () => req.destroy() });
        }
      });
      res.on('error', () => undefined);
    });
    req.on('error', reject);
  });
}

/** POSTs a bike to `baseUrl`; resolves with its id and when its 200 had arrived whole. */
function create(baseUrl, token, i) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ ...bikeBody(i), title: `Live ${i} ${randomUUID().slice(0, 8)}` });
    const req = http.request(
      `${baseUrl}/bikes/`,
      { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => {
          const when = performance.now();
          if (res.statusCode !== 200) return reject(new Error(`create answered ${res.statusCode}: ${text}`));
          resolve({ id: JSON.parse(text).id, when });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * `writes` creates through A, one at a time, each a random 0 to 100 ms (the poll's period) after
 * the last one's events came, so that they meet B's poll at every phase alike, with `count`
 * streams open on B.
 */
async function latencies(a, b, token, count, writes) {
  const arrivals = new Map();
  const waiters = new Map();
  const onEvent = (id, when) => {
    const times = arrivals.get(id) ?? [];
    times.push(when);
    arrivals.set(id, times);
    if (times.length === count) waiters.get(id)?.();
  };
  // From now: the cursor of a search that finds nothing is where the feed stands.
  const listed = await fetch(`${b.baseUrl}/bikes/search/by-title?query=${randomUUID()}`);
  await listed.arrayBuffer();
  const url = `${b.baseUrl}/bikes/changes?since=${encodeURIComponent(listed.headers.get('catalog-cursor'))}`;
  const rssBefore = rssOf(b.pid);
  const streams = await Promise.all(Array.from({ length: count }, () => openStream(url, onEvent)));
  const rssOpen = rssOf(b.pid);
  const measured = [];
  try {
    for (let i = 0; i < writes; i++) {
      await sleep(Math.random() * POLL_MS);
      const { id, when } = await create(a.baseUrl, token, i);
      if ((arrivals.get(id)?.length ?? 0) < count) {
        await new Promise((resolve, reject) => {
          const timer = setTimeout(
            () => reject(new Error(`no event for ${id} in ${EVENT_TIMEOUT_MS} ms`)),
            EVENT_TIMEOUT_MS,
          );
          waiters.set(id, () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      for (const arrived of arrivals.get(id)) measured.push(arrived - when);
      arrivals.delete(id);
      waiters.delete(id);
    }
  } finally {
    for (const stream of streams) stream.close();
  }
  measured.sort((x, y) => x - y);
  return {
    streams: count,
    writes,
    p50: percentile(measured, 50),
    p99: percentile(measured, 99),
    max: measured[measured.length - 1],
    rssPerStreamKb: count > 1 ? (rssOpen - rssBefore) / count : undefined,
  };
}

/** What a poll of the log costs when nothing is new: the statement as the live feed runs it, in ms. */
async function pollCost(databaseUrl) {
  const { changesAfter } = require(path.join(ROOT, 'dist', 'feed', 'changes.js'));
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const query = (text, values) => client.query(text, values);
    const { state } = await changesAfter(query, { position: { txid: '0', changeId: '0' } }, 0);
    const head = { position: state.complete };
    const times = [];
    for (let i = 0; i < 500; i++) {
      const started = performance.now();
      await changesAfter(query, head, 1000);
      times.push(performance.now() - started);
    }
    return median(times);
  } finally {
    await client.end();
  }
}

/**
 * Starts instances A and B on `databaseUrl`, measures with each number of `streams`, stops them.
 * `workDir` takes their logs.
 */
async function measureLive({ databaseUrl, jwtSecret, workDir, writes = 300, streams = [1, 500] }) {
  const env = {
    DATABASE_URL: databaseUrl,
    JWT_SECRET: jwtSecret,
    LOG_LEVEL: 'warn',
    ...PAST_THE_LIMITS,
    // One client (this process) holds every stream.
    MAX_EVENT_STREAMS_PER_CLIENT: String(Math.max(...streams)),
    MAX_EVENT_STREAMS: String(Math.max(...streams)),
  };
  const a = await startServer('live A', ['dist/server.js'], env, workDir);
  const b = await startServer('live B', ['dist/server.js'], env, workDir).catch(async (err) => {
    await a.stop();
    throw err;
  });
  try {
    const { token } = await (await fetch(`${a.baseUrl}/api/user`, { method: 'POST' })).json();
    const runs = [];
    for (const count of streams) runs.push(await latencies(a, b, token, count, writes));
    return { runs, pollMs: await pollCost(databaseUrl) };
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
}

/** The figures as a table, and the goal as met or missed (by the worst p99 of the runs). */
function liveReport({ runs, pollMs }) {
  const rows = [['streams on B', 'creates on A', 'p50 ms', 'p99 ms', 'max ms', 'B RSS per stream kB']];
  for (const run of runs) {
    rows.push([
      run.streams,
      run.writes,
      f1(run.p50),
      f1(run.p99),
      f1(run.max),
      run.rssPerStreamKb === undefined ? '-' : f1(run.rssPerStreamKb),
    ]);
  }
  const worst = Math.max(...runs.map((run) => run.p99));
  return `Commit to event on the other instance (a create's 200 on A to its event on each stream of B)
${table(rows)}
A poll of the log with nothing new: ${pollMs.toFixed(2)} ms (median of 500)
Goal: commit to event on the other instance, p99 < ${GOAL_P99_MS} ms: ${f1(worst)} ms: ${verdict(worst < GOAL_P99_MS)}`;
}

module.exports = { measureLive, liveReport };

if (require.main === module) {
  const { values } = parseArgs({
    options: { writes: { type: 'string', default: '300' }, streams: { type: 'string', default: '1,500' } },
  });
  runAlone(
    'live',
    (setup) => measureLive({ ...setup, writes: Number(values.writes), streams: values.streams.split(',').map(Number) }),
    liveReport,
  );
}
