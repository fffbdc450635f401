'use strict';

/**
 * The change feed's part of npm run bench (docs/reference/browse-and-sync.md#the-change-feed), run by bench/run.js
 * after its write loads, on the same database and service:
 *
 *   - a feed page: GET /bikes/changes?limit=100 from cursors in the middle of the log (the seed's
 *     creates and every write of the loads before), throughput, CPU µs per request and latency;
 *   - a gap-free run: 16 writers on two instances (creates, replaces, patches, some conditional,
 *     deletes) and two sessions of SQL transactions of mixed lengths, while a follower that listed
 *     the catalog first pages the feed, on either instance; once a last write made after all the
 *     others has reached it, its changes are counted against the log's (missed, duplicated) and its
 *     catalog compared with /bikes/all, byte for byte;
 *   - creates with the change capture triggers on and off, in turns (last: a cursor made before
 *     they were off is refused after).
 */
const { randomInt } = require('node:crypto');
const { Client } = require('pg');
const { bikeBody, f0, median, onAndOff, perRound, startServer, table, verdict } = require('./support');

/** Goals: none missed or duplicated in a run of at least this many writes; creates with capture, of creates without. */
const TARGETS = { gapFreeWrites: 20_000, captureCost: 0.9 };
const CAPTURE_TRIGGERS = ['insert', 'update', 'delete', 'truncate'].map((s) => `bikes_changes_on_${s}`);
const PAGE = 100;
/** The most a page of the feed gives. */
const MAX_PAGE = 1000;
const API_WRITERS = 16;
const SQL_WRITERS = 2;

async function getJson(url) {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  return { body: await res.json(), headers: res.headers };
}

/**
 * Pages of `limit=100` from 200 cursors around the middle of the log, taken by following it from
 * its start a full page at a time.
 */
async function measurePage(run, logSize) {
  const { service, turn, log } = run;
  log(`feed page: following the log of ${logSize} changes to its middle`);
  let cursor;
  let page = [];
  for (let read = 0; read < logSize / 2; read += page.length) {
    const since = cursor ? `&since=${cursor}` : '';
    page = (await getJson(`${service.baseUrl}/bikes/changes?limit=${MAX_PAGE}${since}`)).body;
    if (page.length === 0) throw new Error('the feed ended before the middle of the log');
    cursor = page[page.length - 1].cursor;
  }
  const requests = page
    .filter((_, i) => i % 5 === 0)
    .map((change) => ({ method: 'GET', path: `/bikes/changes?limit=${PAGE}&since=${change.cursor}` }));
  const sample = await fetch(`${service.baseUrl}${requests[0].path}`);
  const bytes = (await sample.arrayBuffer()).byteLength;
  await run.cannon(service.baseUrl, requests, 1, run.connectionsOf('changes'));
  const turns = [];
  for (let round = 0; round < run.rounds; round++) {
    log(`GET /bikes/changes?limit=${PAGE}, round ${round + 1} of ${run.rounds}, ${run.duration} s`);
    turns.push(await turn(service, requests, run.connectionsOf('changes')));
  }
  const of = (field) => median(turns.map((t) => t[field]));
  return { logSize, bytes, rps: of('rps'), cpu: of('cpu'), p50: of('p50'), p99: of('p99') };
}

/** A follower: lists the catalog, then follows the feed from the list's cursor, page by page, until it has `last()`. */
function follower(baseUrls, list) {
  const catalog = new Map(list.bikes.map((bike) => [bike.id, bike]));
  const received = [];
  let last;
  let caughtUp;
  const done = (async () => {
    let cursor = list.cursor;
    for (let pages = 0; ; pages++) {
      const { body: page } = await getJson(
        `${baseUrls[pages % 2]}/bikes/changes?limit=${randomInt(PAGE, MAX_PAGE + 1)}&since=${cursor}`,
      );
      for (const change of page) {
        received.push(change.cursor);
        if (change.type === 'upsert') catalog.set(change.id, change.bike);
        else catalog.delete(change.id);
      }
      if (last && catalog.has(last.id)) {
        caughtUp = Date.now() - last.at;
        return;
      }
      if (page.length > 0) cursor = page[page.length - 1].cursor;
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  // Its failure is the run's, once finish() awaits it; not an unhandled rejection before.
  done.catch(() => undefined);
  return {
    catalog,
    received,
    /** Waits until the follower has `lastWrite` (a create answered at `at`); how long after it did. */
    async finish(lastWrite, at) {
      last = { id: lastWrite.id, at };
      await done;
      return caughtUp;
    },
  };
}

/** Writes through the API at `baseUrl`, until `plan.left` is 0; their answers counted in `plan.statuses`. */
async function apiWriter(baseUrl, token, plan) {
  const send = async (method, path, body, headers = {}) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    plan.statuses[res.status] = (plan.statuses[res.status] ?? 0) + 1;
    return res;
  };
  while (plan.left > 0) {
    plan.left--;
    const id = plan.ids[randomInt(plan.ids.length)];
    const op = randomInt(10);
    if (op < 3) {
      const created = await send('POST', '/bikes/', bikeBody(randomInt(100)));
      if (created.status === 200) plan.ids.push((await created.json()).id);
      else await created.arrayBuffer();
    } else if (op < 5) {
      await (
        await send('PUT', `/bikes/${id}`, { ...bikeBody(randomInt(100)), id, handle: `feed-${op}` })
      ).arrayBuffer();
    } else if (op < 8) {
      const headers = {};
      if (op === 7) {
        const current = await fetch(`${baseUrl}/bikes/${id}`);
        await current.arrayBuffer();
        if (current.status === 200) headers['if-match'] = current.headers.get('etag');
      }
      await (await send('PATCH', `/bikes/${id}`, { totalInventory: randomInt(100) }, headers)).arrayBuffer();
    } else {
      await (await send('DELETE', `/bikes/${id}`)).arrayBuffer();
    }
  }
}

/**
 * Reporting SQL while the API writers write: transactions of one to five statements, each
 * updating one to three bikes, with pauses of 5 to 300 ms between; a deadlock between the two
 * sessions rolls one back (its changes never reach the log).
 */
async function sqlWriter(adminUrl, plan) {
  const db = new Client({ connectionString: adminUrl });
  await db.connect();
  try {
    while (plan.left > 0) {
      await db.query('BEGIN');
      try {
        for (let i = randomInt(1, 6); i > 0; i--) {
          const ids = Array.from({ length: randomInt(1, 4) }, () => plan.ids[randomInt(plan.ids.length)]);
          await db.query('UPDATE bikes SET total_inventory = total_inventory + 1 WHERE id = ANY($1::uuid[])', [ids]);
          await db.query('SELECT pg_sleep($1)', [randomInt(5, 300) / 1000]);
        }
        await db.query('COMMIT');
        plan.sqlCommitted++;
      } catch (err) {
        if (err.code !== '40P01') throw err;
        await db.query('ROLLBACK');
        plan.sqlRolledBack++;
      }
    }
  } finally {
    await db.end();
  }
}

/** The gap-free run: its writes, what the follower got of them, and its catalog against /bikes/all. */
async function measureGapFree(run, admin) {
  const { service, token, log } = run;
  const writes = run.quick ? 4000 : TARGETS.gapFreeWrites;
  log(`gap-free run: starting a second instance of the service`);
  const second = await startServer(`${service.name} (second instance)`, service.command, run.serviceEnv, run.workDir);
  try {
    const baseUrls = [service.baseUrl, second.baseUrl];
    // Before any write: every change so far is in the list, every later one after it.
    const before = (await admin.query('SELECT coalesce(max(change_id), 0)::text AS id FROM bike_changes')).rows[0].id;
    const listed = await getJson(`${service.baseUrl}/bikes/all`);
    const list = { bikes: listed.body, cursor: listed.headers.get('catalog-cursor') };
    const plan = {
      left: writes,
      // Few enough bikes that writers often meet on one.
      ids: Array.from({ length: 500 }, () => list.bikes[randomInt(list.bikes.length)].id),
      statuses: {},
      sqlCommitted: 0,
      sqlRolledBack: 0,
    };
    const follow = follower(baseUrls, list);
    log(`gap-free run: ${writes} writes by ${API_WRITERS} writers on two instances, SQL transactions, a follower`);
    const started = Date.now();
    const apiWriters = Array.from({ length: API_WRITERS }, (_, w) => apiWriter(baseUrls[w % 2], token, plan));
    const sqlWriters = Array.from({ length: SQL_WRITERS }, () => sqlWriter(run.adminUrl, plan));
    await Promise.all([...apiWriters, ...sqlWriters]);
    const seconds = (Date.now() - started) / 1000;
    const lastRes = await fetch(`${service.baseUrl}/bikes/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(bikeBody(0)),
    });
    if (lastRes.status !== 200) throw new Error(`the last write answered ${lastRes.status}`);
    const lastWrite = await lastRes.json();
    const caughtUpMs = await follow.finish(lastWrite, Date.now());

    const logged = Number(
      (await admin.query('SELECT count(*) AS n FROM bike_changes WHERE change_id > $1', [before])).rows[0].n,
    );
    const distinct = new Set(follow.received).size;
    const allRes = await fetch(`${service.baseUrl}/bikes/all`);
    const allText = await allRes.text();
    const all = JSON.parse(allText);
    // The follower's catalog in /bikes/all's order, as JSON: the same bytes, or the bikes that differ.
    const mapEqual =
      follow.catalog.size === all.length && JSON.stringify(all.map((b) => follow.catalog.get(b.id))) === allText;
    const differing =
      all.filter((b) => JSON.stringify(follow.catalog.get(b.id)) !== JSON.stringify(b)).length +
      Math.abs(follow.catalog.size - all.length);
    return {
      writes,
      seconds,
      statuses: plan.statuses,
      sqlCommitted: plan.sqlCommitted,
      sqlRolledBack: plan.sqlRolledBack,
      logged,
      received: follow.received.length,
      missed: logged - distinct,
      duplicated: follow.received.length - distinct,
      mapEqual,
      differing,
      bikes: all.length,
      caughtUpMs,
    };
  } finally {
    await second.stop();
  }
}

/** Creates with the change capture triggers on and off, in turns, on the same process and database. */
async function measureCaptureCost(run, admin) {
  const setCapture = (on) =>
    admin.query(
      `ALTER TABLE bikes ${CAPTURE_TRIGGERS.map((t) => `${on ? 'ENABLE ALWAYS' : 'DISABLE'} TRIGGER ${t}`).join(', ')}`,
    );
  return onAndOff({
    rounds: run.rounds,
    set: setCapture,
    measure: async () => (await run.turn(run.service, run.createLoad, run.connectionsOf('create'))).rps,
    log: (state, round) =>
      run.log(`POST /bikes/ with change capture ${state}, round ${round + 1} of ${run.rounds}, ${run.duration} s`),
  });
}

/**
 * The feed's measurements, on `target`: the service (and its environment, to start a second
 * instance), a token, the database's admin URL and the create load; with run.js's `bench`: turn,
 * cannon, log, connectionsOf (a read load's connections, a write load's), rounds, duration, quick.
 * Returns its tables and its goals, as text.
 */
async function measureFeed(target, bench) {
  const run = { ...target, ...bench };
  const admin = new Client({ connectionString: run.adminUrl });
  await admin.connect();
  try {
    const logSize = Number((await admin.query('SELECT count(*) AS n FROM bike_changes')).rows[0].n);
    const page = await measurePage(run, logSize);
    const gapFree = await measureGapFree(run, admin);
    const capture = await measureCaptureCost(run, admin);
    return { tables: tables(page, gapFree, capture), goals: goals(gapFree, capture) };
  } finally {
    await admin.end();
  }
}

function tables(page, g, capture) {
  const pageRows = [
    ['change feed, service', 'req/s', 'CPU µs/req', 'p50/p99 ms', 'page KB', 'log size'],
    [
      `GET /bikes/changes?limit=${PAGE} from the log's middle`,
      f0(page.rps),
      f0(page.cpu),
      `${page.p50} / ${page.p99}`,
      f0(page.bytes / 1024),
      page.logSize,
    ],
  ];
  const statuses = Object.entries(g.statuses)
    .map(([status, n]) => `${n} × ${status}`)
    .join(', ');
  const gapRows = [
    ['gap-free run', ''],
    [
      'writes',
      `${g.writes} by ${API_WRITERS} writers on two instances in ${g.seconds.toFixed(1)} s (${statuses}); ${g.sqlCommitted} SQL transactions (${g.sqlRolledBack} rolled back)`,
    ],
    ['changes logged since the follower listed', String(g.logged)],
    ['changes the follower received', String(g.received)],
    ['missed, duplicated', `${g.missed}, ${g.duplicated}`],
    [
      "follower's catalog against /bikes/all",
      g.mapEqual ? `equal, byte for byte (${g.bikes} bikes)` : `${g.differing} bikes differ`,
    ],
    ['follower had the last write', `${g.caughtUpMs} ms after it`],
  ];
  const captureRows = [
    ['POST /bikes/, service', 'with change capture req/s', 'without req/s', 'ratio (per round)', 'target'],
    [
      'creates',
      f0(capture.on),
      f0(capture.off),
      perRound(capture.ratios),
      `>= ${TARGETS.captureCost}: ${verdict(median(capture.ratios) >= TARGETS.captureCost)}`,
    ],
  ];
  return [pageRows, gapRows, captureRows].map(table).join('\n\n');
}

function goals(g, capture) {
  const answered = Object.keys(g.statuses).every((status) => ['200', '404', '412'].includes(status));
  const gapFree = g.missed === 0 && g.duplicated === 0 && g.mapEqual && answered;
  const size =
    g.writes >= TARGETS.gapFreeWrites ? '' : ` (at ${g.writes} writes; the goal is at ${TARGETS.gapFreeWrites})`;
  const figures = `${g.missed} missed, ${g.duplicated} duplicated, ${g.mapEqual ? 'map equal' : `${g.differing} bikes differ`}${answered ? '' : ', writes answered otherwise than 200, 404 or 412'}`;
  const ratio = median(capture.ratios);
  return [
    `Feed: no change missed or duplicated in ${g.writes} writes from ${API_WRITERS} writers on two instances with SQL transactions of mixed lengths, the follower's map /bikes/all byte for byte: ${figures}${size}: ${verdict(gapFree)}`,
    `Creates with change capture >= ${TARGETS.captureCost} of creates without it: ${perRound(capture.ratios)}: ${verdict(ratio >= TARGETS.captureCost)}`,
  ].join('\n');
}

module.exports = { measureFeed };
