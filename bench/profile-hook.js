'use strict';

/**
 * Loaded into a server by the bench (node --require bench/profile-hook.js), so that a CPU profile
 * covers a load's turn and nothing else (not the start-up, not the other loads): SIGUSR2 starts
 * a profile of the main thread, the next SIGUSR2 stops it and writes it to
 * `$BENCH_PROFILE.<n>.cpuprofile` (written whole, then renamed to that name).
 */
const fs = require('node:fs');
const inspector = require('node:inspector');

/** µs between samples: fine enough for parts of a 100 µs request, cheap enough not to change them. */
const SAMPLING_INTERVAL_US = 200;

const session = new inspector.Session();
session.connect();
const post = (method, params) =>
  new Promise((resolve, reject) =>
    session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))),
  );

let running = false;
let taken = 0;
process.on('SIGUSR2', async () => {
  if (!running) {
    running = true;
    await post('Profiler.enable');
    await post('Profiler.setSamplingInterval', { interval: SAMPLING_INTERVAL_US });
    await post('Profiler.start');
    return;
  }
  running = false;
  const { profile } = await post('Profiler.stop');
  const file = `${process.env.BENCH_PROFILE}.${taken++}.cpuprofile`;
  fs.writeFileSync(`${file}.part`, JSON.stringify(profile));
  fs.renameSync(`${file}.part`, file);
});
