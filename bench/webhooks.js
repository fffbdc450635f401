'use strict';

/**
 * Commit to webhook (docs/webhooks.md#how-delivery-works): two instances of the built service on
 * one database, one subscription to a receiver in this process that answers 204 at once. First,
 * creates through instance A one at a time, each a random 0 to 100 ms after the last one's webhook
 * came: the time from the create's 200 to its webhook at the receiver, whichever instance holds
 * the lease (goal: p99 under 1 s). Then a backlog of creates, replayed to a subscription: the
 * webhooks one subscription sustains per second, from the first arrival to the last.
 *
 *   node bench/webhooks.js [--writes N] [--burst N]   (after `npm run build`) on an embedded
 *                                                      PostgreSQL of its own
 *
 * bench/run.js calls measureWebhooks with its own database, and prints webhooksReport.
 */
const http = require('node:http');
const { randomUUID } = require('node:crypto');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { Client } = require('pg');
const { PAST_THE_LIMITS, bikeBody, runAlone, sleep, startServer, table, verdict } = require('./support');

const ROOT = path.join(__dirname, '..');

const GOAL_P99_MS = 1000;
/** How long a create's webhook may take before the run fails. */
const WEBHOOK_TIMEOUT_MS = 30_000;
/** Connections the burst writes on. */
const BURST_CONNECTIONS = 16;

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const f1 = (n) => n.toFixed(1);

/** A receiver that answers 204 at once: calls `onWebhook(bike id, when)` for each bike.created. */
async function startReceiver(onWebhook) {
  const agentless = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const when = performance.now();
      res.writeHead(204).end();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (body.type === 'bike.created') onWebhook(body.data.id, when);
    });
  });
  await new Promise((resolve) => agentless.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${agentless.address().port}/hook`, close: () => agentless.close() };
}

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: BURST_CONNECTIONS });

/** POSTs a bike to `baseUrl`; resolves with its id and when its 200 had arrived whole. */
function create(baseUrl, token, i) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ ...bikeBody(i), title: `Hook ${i} ${randomUUID().slice(0, 8)}` });
    const req = http.request(
      `${baseUrl}/bikes/`,
      {
        method: 'POST',
        agent: keepAlive,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      },
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

function waitFor(arrivals, waiters, id) {
  if (arrivals.has(id)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no webhook for ${id} in ${WEBHOOK_TIMEOUT_MS} ms`)),
      WEBHOOK_TIMEOUT_MS,
    );
    waiters.set(id, () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

async function measureWebhooks({ databaseUrl, jwtSecret, workDir, writes = 300, burst = 3000 }) {
  const arrivals = new Map();
  const waiters = new Map();
  const receiver = await startReceiver((id, when) => {
    arrivals.set(id, when);
    waiters.get(id)?.();
  });
  const env = { DATABASE_URL: databaseUrl, JWT_SECRET: jwtSecret, LOG_LEVEL: 'warn', ...PAST_THE_LIMITS };
  const a = await startServer('webhooks A', ['dist/server.js'], env, workDir);
  const b = await startServer('webhooks B', ['dist/server.js'], env, workDir).catch(async (err) => {
    await a.stop();
    throw err;
  });
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { subscriptions } = require(path.join(ROOT, 'dist', 'webhooks', 'subscriptions.js'));
    const subs = subscriptions((text, values) => client.query(text, values));
    const added = await subs.add(receiver.url, ['bike.created']);
    const { token } = await (await fetch(`${a.baseUrl}/api/user`, { method: 'POST' })).json();

    const measured = [];
    for (let i = 0; i < writes; i++) {
      await sleep(Math.random() * 100);
      const { id, when } = await create(a.baseUrl, token, i);
      await waitFor(arrivals, waiters, id);
      measured.push(arrivals.get(id) - when);
    }
    measured.sort((x, y) => x - y);

    // The burst: every create at once on BURST_CONNECTIONS, with no subscription; then one from
    // before them, replayed, delivers them from the log as fast as it can.
    await subs.remove(added.id);
    const from = await subs.positionNow();
    let next = 0;
    const ids = [];
    await Promise.all(
      Array.from({ length: BURST_CONNECTIONS }, async () => {
        while (next < burst) ids.push((await create(a.baseUrl, token, next++)).id);
      }),
    );
    const backlog = await subs.add(receiver.url, ['bike.created']);
    const started = performance.now();
    await subs.replay(backlog.id, from);
    for (const id of ids) await waitFor(arrivals, waiters, id);
    const times = ids.map((id) => arrivals.get(id)).sort((x, y) => x - y);
    await subs.remove(backlog.id);
    return {
      writes,
      p50: percentile(measured, 50),
      p99: percentile(measured, 99),
      max: measured[measured.length - 1],
      burst,
      // From the first webhook to the last: the time a lease is first taken left out.
      webhooksPerSecond: (burst - 1) / ((times[times.length - 1] - times[0]) / 1000),
      firstAfterMs: times[0] - started,
    };
  } finally {
    await client.end();
    await Promise.all([a.stop(), b.stop()]);
    receiver.close();
  }
}

function webhooksReport(result) {
  const rows = [
    ['creates on A', 'p50 ms', 'p99 ms', 'max ms'],
    [result.writes, f1(result.p50), f1(result.p99), f1(result.max)],
  ];
  return `Commit to webhook (a create's 200 on A to its webhook at a receiver answering 204, either instance delivering)
${table(rows)}
A backlog of ${result.burst} creates replayed to one subscription: ${result.webhooksPerSecond.toFixed(0)} webhooks/s, one at a time in the log's order (first webhook ${result.firstAfterMs.toFixed(0)} ms after the replay)
Goal: commit to webhook, p99 < ${GOAL_P99_MS} ms: ${f1(result.p99)} ms: ${verdict(result.p99 < GOAL_P99_MS)}`;
}

module.exports = { measureWebhooks, webhooksReport };

if (require.main === module) {
  const { values } = parseArgs({
    options: { writes: { type: 'string', default: '300' }, burst: { type: 'string', default: '3000' } },
  });
  runAlone(
    'webhooks',
    (setup) => measureWebhooks({ ...setup, writes: Number(values.writes), burst: Number(values.burst) }),
    webhooksReport,
  );
}
