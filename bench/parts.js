'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { mainThreadCpuMicros, postgresCpuMicros, sleep, startServer } = require('./support');

/**
 * Where a server's CPU goes, by part of the request: a CPU profile's samples (bench/profile-hook.js)
 * mapped to parts by the file, and for a few by the function, of the frame that was running.
 * The parts are declared here once, by patterns of file paths that survive a file's move
 * (a name, not a folder); a frame no pattern names counts as "other", so a renamed file shows
 * there instead of failing the run. A frame without a file (a function compiled at run time, as
 * fast-json-stringify makes them) counts as the nearest caller that has one.
 */

/**
 * The system calls that write to a socket or a file: to a socket (called through node's streams)
 * parts of their own, the kernel's time for an answer or a query, by the code that wrote (the pg
 * driver, or the HTTP side); to a file (pino's destination), the caller's part.
 */
const WRITES = /^(writev|writeBuffer|writeUtf8String|writeLatin1String|writeAsciiString|writeUcs2String|writeString)$/;
const HTTP_WRITES = 'socket writes of the answers (system calls)';
const QUERY_WRITES = 'socket writes of the queries (system calls)';
const PG_DRIVER = /node_modules\/(pg|pg-protocol|pg-pool)\//;

/** The parts, in the order the table lists them; a frame takes the first part whose pattern its file matches. */
const PARTS = [
  {
    part: 'request log (pino, request ids)',
    file: /request-log|\/logger\.|equivalent\/features|node_modules\/(pino|pino-http|pino-std-serializers|sonic-boom|fast-redact|quick-format-unescaped|safe-stable-stringify|on-exit-leak-free|atomic-sleep)\/|node:internal\/crypto\/random/,
  },
  { part: 'metrics (prom-client)', file: /request-metrics|\/metrics\.|node_modules\/(prom-client|tdigest|bintrees)\// },
  { part: 'CORS', file: /\/cors\.|node_modules\/@koa\/cors\// },
  {
    part: 'representation (ETag, compression, 304)',
    file: /representation|conditional|compression|node_modules\/(@koa\/etag|etag|koa-etag|koa-conditional-get|koa-compress|compressible|fresh)\/|node:internal\/crypto\/hash|node:zlib/,
  },
  {
    part: 'routes and checks (router, limits, input)',
    file: /\/route\.|\/endpoint\.|preconditions|\/http\/schema\.|api-routes|path-matching|\/limits\.|method-not-allowed|\/errors\.|\/headers\.|\/body\.|invalid-field|json-schema|json-numbers|\/yup\.|page-cursor|feed-cursor|\/cursors\.|node_modules\/(@koa\/router|path-to-regexp|yup|property-expr|tiny-case|toposort|koa-bodyparser|co-body|raw-body|type-is|media-typer)\//,
  },
  { part: 'JSON of the bikes', file: /bike-json|node_modules\/fast-json-stringify\//, name: /^(stringify|parse)$/ },
  {
    part: 'handler, repository, pg driver',
    file: /bike-handlers|\/api\/|\/bikes\/|\/db\/|\/feed\/|minimal\/sql|equivalent\/koa-pg|baseline\.js|node_modules\/(pg|pg-protocol|pg-pool|pg-types|pg-int8|postgres-array|postgres-bytea|postgres-date|postgres-interval|pg-cloudflare|pg-connection-string|split2)\//,
  },
  {
    part: 'Koa',
    file: /node_modules\/(koa|koa-compose|delegates|http-errors|statuses|vary|on-finished|ee-first|encodeurl|escape-html|accepts|negotiator|content-type|content-disposition|cookies|keygrip|only|http-assert|destroy|depd|parseurl|mime-types|mime-db|cache-content-type|ylru|setprototypeof|inherits|toidentifier)\/|\/app\.[jt]s$/,
  },
  {
    part: 'promises, ticks and timers',
    file: /^node:internal\/(process\/task_queues|timers)/,
    name: /^(runMicrotasks|processTicksAndRejections)$/,
  },
  { part: 'listener, node:http, sockets, streams', file: /\/listener\.|^node:/ },
  { part: HTTP_WRITES },
  { part: QUERY_WRITES },
  { part: 'garbage collector', name: /^\(garbage collector\)$/ },
  { part: 'V8 and native code, unattributed', name: /^\(program\)$/ },
];
const OTHER = 'other';
const IDLE = /^\(idle\)$/;

/** The part of a frame by its own file and name; undefined for a frame without a file. */
function partOf({ url, functionName }) {
  for (const { part, file, name } of PARTS) {
    if (name?.test(functionName) && (!file || !url)) return part;
    if (url && file?.test(url)) return part;
  }
  return url ? OTHER : undefined;
}

/** The files of the frames from `id` to the root, the frame's own first (those that have one). */
function filesUp(id, byId, parentOf) {
  const files = [];
  for (let at = id; at !== undefined; at = parentOf.get(at)) {
    const { url } = byId.get(at).callFrame;
    if (url) files.push(url);
  }
  return files;
}

/** The part of a write to a socket (its nearest file is node's own), by who wrote; undefined for any other frame. */
function socketWriteOf(id, byId, parentOf) {
  if (!WRITES.test(byId.get(id).callFrame.functionName)) return undefined;
  const files = filesUp(id, byId, parentOf);
  if (!files[0]?.startsWith('node:')) return undefined;
  return PG_DRIVER.test(files.find((file) => !file.startsWith('node:')) ?? '') ? QUERY_WRITES : HTTP_WRITES;
}

/**
 * Self time (µs) of each part in a .cpuprofile: every sample counts as its frame's part, or its
 * nearest caller's with a file. Idle samples are left out.
 */
function partsOfProfile(profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const partOfNode = new Map();
  const resolve = (id) => {
    if (partOfNode.has(id)) return partOfNode.get(id);
    const { callFrame } = byId.get(id);
    let part = partOf(callFrame) ?? socketWriteOf(id, byId, parentOf);
    if (part === undefined) part = parentOf.has(id) ? resolve(parentOf.get(id)) : OTHER;
    partOfNode.set(id, part);
    return part;
  };
  const times = new Map();
  profile.samples.forEach((id, i) => {
    const { callFrame } = byId.get(id);
    if (IDLE.test(callFrame.functionName)) return;
    // The delta after a sample is the time it stands for.
    const delta = profile.timeDeltas[i + 1] ?? 0;
    const part = resolve(id);
    times.set(part, (times.get(part) ?? 0) + delta);
  });
  return times;
}

/**
 * The parts of a turn, µs per request: the profile's shares of the main thread's CPU time in the
 * turn (sampled time also counts moments the thread waited for a core, CPU time does not), the
 * process's other threads (the garbage collector's helpers, libuv's pool) as one more part, and
 * PostgreSQL's backends.
 */
function partsPerRequest({ profile, requests, mainThreadCpu, processCpu, postgresCpu }) {
  const times = partsOfProfile(profile);
  const sampled = [...times.values()].reduce((a, b) => a + b, 0);
  const parts = new Map();
  for (const { part } of [...PARTS, { part: OTHER }]) {
    parts.set(part, sampled > 0 ? ((times.get(part) ?? 0) / sampled) * (mainThreadCpu / requests) : 0);
  }
  parts.set('other threads of the process', Math.max(0, processCpu - mainThreadCpu) / requests);
  parts.set('node process, all', processCpu / requests);
  parts.set('PostgreSQL (the whole server)', postgresCpu / requests);
  return parts;
}

/** The rows of a table of parts, one column per server or load: µs per request. */
function partsRows(columns) {
  const names = [...columns[0].parts.keys()];
  return [
    ['CPU µs per request', ...columns.map((c) => c.label)],
    ...names.map((name) => [
      name,
      ...columns.map((c) => {
        const micros = c.parts.get(name) ?? 0;
        // A turn that answered nothing (a machine too loaded for its seconds) has no figure.
        return Number.isFinite(micros) ? micros.toFixed(0) : '-';
      }),
    ]),
  ];
}

/**
 * One turn of `requests` on `server` (started with profile-hook.js) under a CPU profile: the
 * parts of its requests. `turn(server, requests, connections)` is the bench's, and `backendPid` any
 * PostgreSQL backend's (postgresCpuMicros).
 */
async function profiledTurn({ server, requests, connections, turn, backendPid, profiles }) {
  const file = `${profiles}.${server.profilesTaken++}.cpuprofile`;
  process.kill(server.pid, 'SIGUSR2');
  await sleep(200);
  const [main, postgres] = [mainThreadCpuMicros(server.pid), postgresCpuMicros(backendPid)];
  const result = await turn(server, requests, connections);
  const mainThreadCpu = mainThreadCpuMicros(server.pid) - main;
  const postgresCpu = postgresCpuMicros(backendPid) - postgres;
  process.kill(server.pid, 'SIGUSR2');
  for (let waited = 0; !fs.existsSync(file); waited += 100) {
    if (waited > 30_000) throw new Error(`${server.name}: no profile written in 30 s`);
    await sleep(100);
  }
  return partsPerRequest({
    profile: JSON.parse(fs.readFileSync(file, 'utf8')),
    requests: result.requests,
    mainThreadCpu,
    processCpu: result.cpu * result.requests,
    postgresCpu,
  });
}

/**
 * Where a request's CPU goes, the service's beside other servers' (bench/equivalent/koa-pg.js):
 * `servers` ({ name, command, env }) are started anew with profile-hook.js, each load is warmed
 * up, then each server takes one profiled turn of it. Returns a table's rows, one column per load
 * and server. Profiles are kept in `profileDir`.
 */
async function measureParts({ servers, loads, workDir, profileDir, turn, cannon, connections, backendPid, log }) {
  fs.mkdirSync(profileDir, { recursive: true });
  const started = [];
  try {
    for (const { name, command, env } of servers) {
      const profiles = path.join(profileDir, `${name.replace(/[^\w.-]+/g, '-')}-${Date.now()}`);
      const server = await startServer(
        `${name}, profiled`,
        ['--require', HOOK, ...command],
        {
          ...env,
          BENCH_PROFILE: profiles,
        },
        workDir,
      );
      started.push({ ...server, profiles, profilesTaken: 0 });
    }
    const columns = [];
    for (const [load, requests] of Object.entries(loads)) {
      for (const server of started) await cannon(server.baseUrl, requests, 1, connections);
      for (const server of started) {
        log(`${load}: ${server.name}, a profiled turn`);
        const parts = await profiledTurn({
          server,
          requests,
          connections,
          turn,
          backendPid,
          profiles: server.profiles,
        });
        columns.push({ label: `${load}, ${server.name.replace(/, profiled$/, '')}`, parts });
      }
    }
    return partsRows(columns);
  } finally {
    for (const server of started) await server.stop();
  }
}

const HOOK = path.join(__dirname, 'profile-hook.js');

module.exports = { HOOK, measureParts, profiledTurn, partsRows };
