'use strict';

const http = require('node:http');

/** Serves `handler` on PORT until SIGTERM or SIGINT, then runs `close`. */
function serve(handler, close) {
  const server = http.createServer(handler);
  server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`listening on ${server.address().port}`));
  const stop = () => server.close(() => close().then(() => process.exit(0)));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

module.exports = { serve };
