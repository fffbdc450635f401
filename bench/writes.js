'use strict';

/**
 * Where a create's database time goes, part by part (issue 42), as bench/parts.js shows a read's
 * CPU: on a scratch database of its own in the bench's PostgreSQL, migrated and seeded, creates
 * sent as the service sends them (its compiled statement, from dist/, with a writer) on a few
 * connections, with everything on, and then with each part switched off in turn: a trigger
 * disabled, an index dropped (and made again after), the writer's CTE or the idempotency record
 * left out of the statement. Each round measures every state once, in an order that rotates from
 * round to round, so a part's cost is the full state's figures less its own, taken close in time:
 * the creates a second, and the CPU µs per create of the backends that ran them (on a shared
 * machine throughput swings, CPU per create much less). Then the row alone (no trigger, no index but the
 * primary key, no writer); and creates, PUTs and PATCHes under EXPLAIN (ANALYZE), one at a time,
 * which give each trigger's own time in each (explainedParts).
 *
 * The states change the scratch database only; the bench's own is not touched.
 */
const { randomUUID } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { Client } = require('pg');
const { seedBikes } = require('./seed');
const { bikeBody, f0, f2, median, table, verdict } = require('./support');

const ROOT = path.join(__dirname, '..');
const { migrate } = require(path.join(ROOT, 'dist', 'db', 'migrate.js'));
const { statements } = require(path.join(ROOT, 'dist', 'bikes', 'repository.js'));
const { patchValues, toModelFields } = require(path.join(ROOT, 'dist', 'bikes', 'fields.js'));
const { deriveHandle } = require(path.join(ROOT, 'dist', 'bikes', 'bike.js'));

/** The goal of issue 42: creates with every trigger on, of creates with them all off. */
const TARGETS = { triggersOn: 0.8 };

/** The scratch database's name and size (indexes are made again after each turn without them). */
const DATABASE = 'bench_writes';
const SCRATCH_BIKES = 10_000;

/** The triggers a create fires: each with what it keeps. */
const TRIGGERS = [
  ['bikes_changes_on_insert', 'change capture: the change row, its copy of the bike and its writer'],
  ['bikes_version_on_insert', "the catalog version's slot"],
  ['bikes_add_words_on_insert', "the storefront's bike_words (storefront search)"],
];

/** The catalog's own triggers on a create (issue 42's "every trigger": version, change capture), and every one. */
const CATALOG_TRIGGERS = ['bikes_changes_on_insert', 'bikes_version_on_insert'];
const EVERY_TRIGGER = TRIGGERS.map(([name]) => name);

/** A writer as the service names one: a token's subject, its issuer, its scopes, no API key. */
const WRITER = ['bench-writer', 'bike-catalog', 'bikes:write', null];

/** The statements a create may send, each as text and its values for the i-th create. */
function createStatements() {
  const textOf = (statement, values) => {
    let captured;
    statement.run((text, params) => {
      captured = { text, params };
      return Promise.resolve({ rows: [] });
    }, values);
    return captured.text;
  };
  const valuesOf = (i) => {
    const body = bikeBody(i);
    return { ...toModelFields({ ...body, id: randomUUID(), handle: deriveHandle(body.title) }), writer: WRITER };
  };
  const sample = valuesOf(0);
  const insert = textOf(statements.insert, sample);
  const paramsOf =
    (statement) =>
    (i, extra = {}) => {
      let params;
      statement.run(
        (text, p) => {
          params = p;
          return Promise.resolve({ rows: [] });
        },
        { ...valuesOf(i), ...extra },
      );
      return params;
    };
  // The service's insert, its writer's CTE replaced by a row that sets nothing (the writer is
  // still a parameter, so the statement's parameters stay as they are).
  const writerCte = /\(SELECT set_config\('bike_catalog\.writer', (\$\d+)::text\[\]::text, true\) AS set WHERE .*?\)\)/;
  if (!writerCte.test(insert)) throw new Error(`the insert's writer CTE is not where bench/writes.js looks: ${insert}`);
  const unset = insert.replace(writerCte, (_, writer) => `(SELECT ${writer}::text[] IS NULL AS set)`);
  const once = textOf(statements.createOnce, { ...sample, client: 'c', key: 'k', fingerprint: 'f', response: 'r' });
  const insertParams = paramsOf(statements.insert);
  const onceParams = paramsOf(statements.createOnce);
  /** A PUT's and a PATCH's statements over the bike `ids[i]` (one of the seeded bikes). */
  const over = (statement, extra) => {
    const params = paramsOf(statement);
    return {
      text: textOf(statement, { ...sample, ...extra(0, sample.id) }),
      params: (i, ids) => params(i, extra(i, ids[i % ids.length])),
    };
  };
  const conditions = { ifMatch: null, ifNoneMatch: null };
  return {
    insert: { text: insert, params: insertParams },
    withoutWriter: { text: unset, params: insertParams },
    createOnce: {
      text: once,
      params: (i) => onceParams(i, { client: 'bench', key: randomUUID(), fingerprint: 'f', response: '{}' }),
    },
    upsert: over(statements.upsert, (i, id) => ({ ...conditions, id })),
    patch: over(statements.patch, (i, id) => ({ ...conditions, id, ...patchValues({ totalInventory: i }) })),
  };
}

/** How many writes of each kind go under EXPLAIN (ANALYZE), after 20 that are not counted. */
const EXPLAINED = 200;

/**
 * Each part's own time in a write, from EXPLAIN (ANALYZE) of `EXPLAINED` of them on one
 * connection: the medians of the statement's own time (the row, its indexes, the writer's CTE),
 * of each trigger's, and of the whole execution (the queue of after-triggers and their
 * transition tables are the difference). Medians of single writes are what a loaded machine
 * leaves steady: a write seldom loses its core in the middle, a turn of a second always does.
 */
async function explainedParts(client, statement, ids, counter) {
  const times = {};
  for (let i = 0; i < EXPLAINED + 20; i++) {
    const { rows } = await client.query(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`,
      statement.params(counter.next++, ids),
    );
    if (i < 20) continue;
    const [plan] = rows[0]['QUERY PLAN'];
    const add = (part, ms) => (times[part] ??= []).push(ms * 1000);
    add('the statement: the row, its indexes, the writer', plan.Plan['Actual Total Time']);
    for (const trigger of plan.Triggers ?? []) add(`trigger ${trigger['Trigger Name']}`, trigger.Time);
    add('the whole execution (the queue of after-triggers besides)', plan['Execution Time']);
  }
  return Object.fromEntries(Object.entries(times).map(([part, values]) => [part, median(values)]));
}

/**
 * Time on a CPU of the backends `pids`, in µs: /proc/<pid>/schedstat's first field, in ns (the
 * scheduler's own count, where /proc/<pid>/stat counts in ticks of 10 ms: too coarse for a
 * backend's share of a turn).
 */
const backendsCpuMicros = (pids) =>
  pids.reduce((sum, pid) => sum + Number(fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e3, 0);

/**
 * Creates for `ms` on `clients`, each one after another: how many a second, and the CPU µs per
 * create of their backends (the statements' own work, the triggers' and the commit's, without
 * the server's background processes).
 */
async function createTurn(clients, statement, ms, pids, counter) {
  const cpuBefore = backendsCpuMicros(pids);
  const started = process.hrtime.bigint();
  const until = Date.now() + ms;
  let made = 0;
  await Promise.all(
    clients.map(async (client) => {
      while (Date.now() < until) {
        await client.query(statement.text, statement.params(counter.next++));
        made++;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { rps: made / seconds, cpu: (backendsCpuMicros(pids) - cpuBefore) / made };
}

/**
 * The states measured: everything on, then each part off. `off` switches the part off (by
 * `admin`, on the scratch database) and returns what switches it on again; `statement` names
 * the statement the state sends (the service's insert unless it says).
 */
async function statesOf(admin) {
  const disable = (triggers) => async () => {
    await admin.query(`ALTER TABLE bikes ${triggers.map((t) => `DISABLE TRIGGER ${t}`).join(', ')}`);
    return () => admin.query(`ALTER TABLE bikes ${triggers.map((t) => `ENABLE ALWAYS TRIGGER ${t}`).join(', ')}`);
  };
  const indexes = (
    await admin.query(
      `SELECT i.indexrelid::regclass::text AS name, t.relname AS "table", pg_get_indexdef(i.indexrelid) AS def
         FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
        WHERE t.relname IN ('bikes', 'bike_changes', 'bike_words') AND NOT i.indisprimary
        ORDER BY t.relname, 1`,
    )
  ).rows;
  const dropping = (list) => async () => {
    for (const index of list) await admin.query(`DROP INDEX ${index.name}`);
    return async () => {
      for (const index of list) await admin.query(index.def);
    };
  };
  const allTriggers = EVERY_TRIGGER;
  return {
    floor: {
      label: 'the row alone: no trigger, no index but the primary key, no writer',
      off: async () => {
        const on = [await disable(allTriggers)(), await dropping(indexes.filter((i) => i.table === 'bikes'))()];
        return async () => {
          for (const restore of on) await restore();
        };
      },
      statement: 'withoutWriter',
    },
    states: [
      {
        label: 'nothing off: everything on against itself (the noise of a pair of turns)',
        off: async () => async () => {},
      },
      ...TRIGGERS.map(([name, what]) => ({ label: `trigger ${name} (${what})`, off: disable([name]) })),
      { label: "the catalog's triggers (version, change capture)", off: disable(CATALOG_TRIGGERS) },
      { label: 'every trigger (the three above)', off: disable(allTriggers), allTriggers: true },
      {
        label: "the writer's setting (the statement's CTE: set_config, the API key check)",
        off: async () => async () => {},
        statement: 'withoutWriter',
      },
      ...indexes.map((index) => ({ label: `index ${index.name} on ${index.table}`, off: dropping([index]) })),
    ],
  };
}

/**
 * Measures, on a scratch database made in the cluster `adminUrl` names (and dropped after):
 * `rounds` rounds of turns of `ms`, on `connections` connections. Returns the parts' rows and
 * the creates under EXPLAIN.
 */
async function measureWrites({ adminUrl, rounds, ms, connections, log }) {
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${DATABASE}`);
  await admin.query(`CREATE DATABASE ${DATABASE}`);
  const url = new URL(adminUrl);
  url.pathname = `/${DATABASE}`;
  const scratchUrl = url.toString();
  const scratch = new Client({ connectionString: scratchUrl });
  const clients = Array.from({ length: connections }, () => new Client({ connectionString: scratchUrl }));
  try {
    log(`writes: a scratch database of ${SCRATCH_BIKES} bikes`);
    await migrate(scratchUrl);
    await scratch.connect();
    await seedBikes(scratch, SCRATCH_BIKES);
    // No autovacuum during the turns: its work would count in whichever part it fell in.
    for (const name of ['bikes', 'bike_changes', 'bike_words']) {
      await scratch.query(`ALTER TABLE ${name} SET (autovacuum_enabled = false)`);
    }
    await Promise.all(clients.map((c) => c.connect()));
    const pids = await Promise.all(
      clients.map(async (c) => (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid),
    );
    const sent = createStatements();
    const { floor, states } = await statesOf(scratch);
    const idempotent = { label: 'the idempotency record (a create under an Idempotency-Key)', statement: 'createOnce' };
    const measured = [...states, idempotent, floor];
    const turns = measured.map(() => []);
    const onTurns = measured.map(() => []);
    const counter = { next: 1 };
    // Warm up: every connection has prepared and planned the statements.
    for (const statement of [sent.insert, sent.withoutWriter, sent.createOnce])
      await createTurn(clients, statement, 500, pids, counter);
    // A turn after a switch: first a fifth of it uncounted (the connections plan their
    // statements and the triggers' again), then the turn.
    const measure = async (statement) => {
      await createTurn(clients, statement, ms / 5, pids, counter);
      return createTurn(clients, statement, ms, pids, counter);
    };
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < measured.length; k++) {
        const i = (k + round) % measured.length;
        const state = measured[i];
        log(`writes: round ${round + 1} of ${rounds}: ${state.label}, and everything on`);
        // Everything on beside each state, in an order that alternates: its cost is their difference.
        for (const off of (k + round) % 2 ? [true, false] : [false, true]) {
          if (!off) {
            onTurns[i].push(await measure(sent.insert));
            continue;
          }
          const on = state.off ? await state.off() : async () => {};
          try {
            turns[i].push(await measure(sent[state.statement ?? 'insert']));
          } finally {
            await on();
          }
        }
      }
    }
    log(`writes: ${EXPLAINED} creates, PUTs and PATCHes under EXPLAIN (ANALYZE)`);
    const ids = (await scratch.query('SELECT id FROM bikes ORDER BY seq LIMIT 1000')).rows.map((r) => r.id);
    const explained = {};
    for (const [kind, statement] of [
      ['create', sent.insert],
      ['PUT', sent.upsert],
      ['PATCH', sent.patch],
    ]) {
      explained[kind] = await explainedParts(scratch, statement, ids, counter);
    }
    return { measured, turns, onTurns, explained, connections };
  } finally {
    await Promise.all(clients.map((c) => c.end().catch(() => {})));
    await scratch.end().catch(() => {});
    await admin.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`).catch(() => {});
    await admin.end();
  }
}

/** What measureWrites measured: a table of the parts, the goal, and the plan with each trigger's time. */
function writesReport({ measured, turns, onTurns, explained, connections }) {
  const rows = [
    [
      'part of a create',
      'creates/s, everything on',
      'creates/s without it',
      'on / without',
      "backends' CPU µs/create without it",
      'its cost µs',
    ],
  ];
  const ratiosOf = (i) => turns[i].map((t, round) => onTurns[i][round].rps / t.rps);
  measured.forEach((state, i) => {
    const costs = turns[i].map((t, round) => onTurns[i][round].cpu - t.cpu);
    const withIt = state.statement === 'createOnce';
    rows.push([
      withIt ? `with ${state.label}` : state.label,
      f0(medianOf(onTurns[i], 'rps')),
      f0(medianOf(turns[i], 'rps')),
      f2(median(ratiosOf(i))),
      f0(medianOf(turns[i], 'cpu')),
      `${f0(median(costs) * (withIt ? -1 : 1))} (everything on: ${f0(medianOf(onTurns[i], 'cpu'))})`,
    ]);
  });
  const offIndex = measured.findIndex((s) => s.allTriggers);
  const ratios = ratiosOf(offIndex);
  const ratio = median(ratios);
  return [
    `Where a create's database time goes: the service's insert on ${connections} connections, a scratch database of ${SCRATCH_BIKES} bikes, each part switched off in turn beside a turn with everything on (median of the rounds; "its cost": the backends' CPU per create with everything on, less without the part; the idempotency record's: with it, less without)`,
    table(rows),
    '',
    `Each part's own time in a write: µs, medians of ${EXPLAINED} of each under EXPLAIN (ANALYZE), one connection, on the same database`,
    explainedTable(explained),
    '',
    `creates with every trigger on, of all off (the database alone, the storefront's words among them): ${f2(ratio)} (${ratios.map(f2).join(' ')})`,
  ].join('\n');
}

/** explainedParts' medians, a column for each kind of write. */
function explainedTable(explained) {
  const kinds = Object.keys(explained);
  const parts = [...new Set(kinds.flatMap((kind) => Object.keys(explained[kind])))];
  const last = (part) => part.startsWith('the whole');
  parts.sort((a, b) => last(a) - last(b));
  return table([
    ['part of a write', ...kinds],
    ...parts.map((part) => [part, ...kinds.map((kind) => (part in explained[kind] ? f0(explained[kind][part]) : '-'))]),
  ]);
}

const medianOf = (values, field) => median(values.map((v) => v[field]));

/**
 * Creates through the service, `service` (run.js's server, on the bench's database `adminUrl`),
 * with the triggers on, and with the catalog's (version, change capture) off, and with every one
 * off (the storefront's words too), in turns whose order rotates from round to round: `turn` is
 * run.js's (creates a second and the service's CPU µs per create).
 */
async function measureTriggersThroughService({ service, createLoad, adminUrl, rounds, connections, turn, log }) {
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  const set = async (triggers, on) => {
    if (triggers.length === 0) return;
    await admin.query(
      `ALTER TABLE bikes ${triggers.map((t) => `${on ? 'ENABLE ALWAYS' : 'DISABLE'} TRIGGER ${t}`).join(', ')}`,
    );
  };
  const states = [
    ['on', []],
    ['catalog', CATALOG_TRIGGERS],
    ['every', EVERY_TRIGGER],
  ];
  const turns = Object.fromEntries(states.map(([name]) => [name, []]));
  try {
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < states.length; k++) {
        const [name, off] = states[(k + round) % states.length];
        log(
          `POST /bikes/ with ${name === 'on' ? 'every trigger on' : `${off.join(', ')} off`}, round ${round + 1} of ${rounds}`,
        );
        await set(off, false);
        try {
          turns[name].push(await turn(service, createLoad, connections));
        } finally {
          await set(off, true);
        }
      }
    }
  } finally {
    await set(EVERY_TRIGGER, true).catch(() => {});
    await admin.end();
  }
  return turns;
}

/** The lines of measureTriggersThroughService's turns, and the goal met or missed. */
function triggersReport(turns, connections) {
  const ratios = (name) => turns.on.map((t, round) => t.rps / turns[name][round].rps);
  const rows = [
    ['POST /bikes/, the service', 'creates/s', 'service CPU µs/create', 'every trigger on, of this (per round)'],
    ['every trigger on', f0(medianOf(turns.on, 'rps')), f0(medianOf(turns.on, 'cpu')), ''],
    [
      `the catalog's off (${CATALOG_TRIGGERS.join(', ')})`,
      f0(medianOf(turns.catalog, 'rps')),
      f0(medianOf(turns.catalog, 'cpu')),
      `${f2(median(ratios('catalog')))} (${ratios('catalog').map(f2).join(' ')})`,
    ],
    [
      "every one off (the storefront's words too)",
      f0(medianOf(turns.every, 'rps')),
      f0(medianOf(turns.every, 'cpu')),
      `${f2(median(ratios('every')))} (${ratios('every').map(f2).join(' ')})`,
    ],
  ];
  const ratio = median(ratios('catalog'));
  return [
    `Creates through the service with its triggers on and off, in turns (${connections} connections)`,
    table(rows),
    `goal: creates with the catalog's triggers on (version, change capture, the writer's columns) >= ${TARGETS.triggersOn} of off: ${f2(ratio)}: ${verdict(ratio >= TARGETS.triggersOn)}; with every trigger, the storefront's words too: ${f2(median(ratios('every')))}`,
  ].join('\n');
}

module.exports = { measureTriggersThroughService, measureWrites, triggersReport, writesReport };
