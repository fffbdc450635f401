'use strict';

/** What bench/run.js and bench/scale.js both need. */
const net = require('node:net');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

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

module.exports = { freePort, median, sleep, table };
