'use strict';

/** What the bench's scripts share. */
const { execFileSync, spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const f0 = (n) => n.toFixed(0);
const f2 = (n) => n.toFixed(2);
const verdict = (ok) => (ok ? 'met' : 'MISSED');
/** Ratios as the tables print them: the median, then each round's. */
const perRound = (ratios) => `${f2(median(ratios))} (${ratios.map(f2).join(' ')})`;

/**
 * Throughput with something switched on and off, in turns whose order alternates from round to
 * round: `set(on)` switches it, `measure()` is one turn's requests a second. It is on again at the
 * end, however the run ends.
 */
async function onAndOff({ rounds, set, measure, log }) {
  const rps = { on: [], off: [] };
  try {
    for (let round = 0; round < rounds; round++) {
      for (const state of round % 2 ? ['off', 'on'] : ['on', 'off']) {
        log(state, round);
        await set(state === 'on');
        rps[state].push(await measure());
      }
    }
  } finally {
    await set(true);
  }
  return { on: median(rps.on), off: median(rps.off), ratios: rps.on.map((r, i) => r / rps.off[i]) };
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100;
  } catch {
    return 100;
  }
})();

/** The fields of /proc/<pid>/stat (or /proc/<pid>/task/<tid>/stat) after the command's name, the 3rd first. */
function statFields(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command's name may hold spaces: the fields start after its closing parenthesis.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}
const ticksToMicros = (...ticks) => (ticks.reduce((sum, t) => sum + Number(t), 0) * 1e6) / CLOCK_TICKS;

/** CPU time a process has used so far, user and system, all its threads, in µs (utime, stime). */
const cpuMicros = (pid) => {
  const fields = statFields(pid);
  return ticksToMicros(fields[14 - 3], fields[15 - 3]);
};

/** CPU time of a process's main thread so far, in µs (the thread whose id is the process's). */
const mainThreadCpuMicros = (pid) => cpuMicros(`${pid}/task/${pid}`);

/**
 * CPU time the whole PostgreSQL server has used so far, in µs: the postmaster, every process it
 * runs now (backends, the WAL writer, the checkpointer...), and those that have exited (cutime,
 * cstime), so that a backend closed during a turn still counts. `backendPid`: any backend's.
 */
function postgresCpuMicros(backendPid) {
  const postmaster = statFields(backendPid)[4 - 3];
  const fields = statFields(postmaster);
  let total = ticksToMicros(fields[14 - 3], fields[15 - 3], fields[16 - 3], fields[17 - 3]);
  for (const pid of fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (statFields(pid)[4 - 3] === postmaster) total += cpuMicros(pid);
    } catch {
      // gone meanwhile: its time is in the postmaster's cutime now
    }
  }
  return total;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** A table in Markdown's pipe syntax, one row per line. */
function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  return rows.map((r) => '| ' + r.map((c, i) => String(c).padEnd(widths[i])).join(' | ') + ' |').join('\n');
}

/**
 * A fresh working directory for an embedded PostgreSQL and the servers' logs. Others may traverse
 * it: as root PostgreSQL runs as the postgres user, and in a directory it cannot reach its cluster
 * would be kept in /var/lib/bike-catalog, outliving the directory.
 */
function tempWorkDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
  fs.chmodSync(dir, 0o711);
  return dir;
}

/** A valid bike body for the write loads, different for each `i`. */
function bikeBody(i) {
  return {
    title: `Benchmark Bicycle ${i}`,
    productType: 'Road',
    createdAt: '2025-01-01T00:00:00Z',
    description: 'Written by the benchmark',
    vendor: 'Bench',
    availableForSale: true,
    totalInventory: i,
    priceRange: { minPrice: { amount: 500, currencyCode: 'USD' }, maxPrice: { amount: 700, currencyCode: 'USD' } },
  };
}

/** Until the server answers HTTP at all (the service listens once its database is ready). */
async function waitUntilAnswering(baseUrl, child) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`process exited with ${child.exitCode} during start-up`);
    try {
      await (await fetch(`${baseUrl}/bikes/by-handle/-`)).arrayBuffer();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error('process did not answer within 60 s');
      await sleep(100);
    }
  }
}

/** Starts a server (node `command`) as a child process, its output in a log file, and waits until it answers. */
async function startServer(name, command, env, workDir) {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const logFile = path.join(workDir, `${name.replace(/[^\w.-]+/g, '-')}.log`);
  const logFd = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, command, {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', logFd, logFd],
  });
  fs.closeSync(logFd);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    await waitUntilAnswering(baseUrl, child);
  } catch (err) {
    child.kill('SIGKILL');
    const output = fs.readFileSync(logFile, 'utf8').slice(-2000);
    throw new Error(`${name}: ${err.message}; its output:\n${output}`, { cause: err });
  }
  return {
    name,
    baseUrl,
    pid: child.pid,
    /** The end of what the process wrote, for an error message. */
    output: () => fs.readFileSync(logFile, 'utf8').slice(-2000),
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * A measurement run on its own (`node bench/<part>.js`): a scratch embedded PostgreSQL, migrated,
 * handed to `measure` with a signing secret and a work directory; `report` prints what it found;
 * the server stopped and the directory removed however it ends, the exit code 1 on an error.
 */
function runAlone(name, measure, report) {
  (async () => {
    const { startEmbeddedPostgres } = require(path.join(ROOT, 'dist', 'postgres', 'embedded-postgres.js'));
    const { migrate } = require(path.join(ROOT, 'dist', 'db', 'migrate.js'));
    const workDir = tempWorkDir(`bike-bench-${name}`);
    const pg = await startEmbeddedPostgres({ dataDir: workDir });
    try {
      await migrate(pg.adminUrl);
      const jwtSecret = randomBytes(32).toString('base64url');
      console.log(report(await measure({ databaseUrl: pg.adminUrl, jwtSecret, workDir })));
    } finally {
      await pg.stop();
      fs.rmSync(workDir, { recursive: true, force: true });
    }
  })().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}

/**
 * The service's limits a load would meet as 429s, set past any load: one client (the bench's own
 * process) stands for many. Every bench that starts the service spreads it into its environment.
 */
const PAST_THE_LIMITS = { RATE_LIMIT_WRITES: '1000000000', MAX_LIST_STREAMS: '1000' };

module.exports = {
  PAST_THE_LIMITS,
  bikeBody,
  cpuMicros,
  mainThreadCpuMicros,
  postgresCpuMicros,
  f0,
  f2,
  freePort,
  median,
  onAndOff,
  perRound,
  runAlone,
  sleep,
  startServer,
  table,
  tempWorkDir,
  verdict,
};
