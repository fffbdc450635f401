'use strict';

/**
 * What the feature-equivalent peers (bench/equivalent/) share, each feature set up as the
 * library's documentation shows: the request log, the request-duration histogram, the bearer
 * token check, CORS's origin and the compression settings the service uses.
 */
const { createSecretKey } = require('node:crypto');
const { constants } = require('node:zlib');
const jwt = require('jsonwebtoken');
const pino = require('pino');
const { Histogram, collectDefaultMetrics, register } = require('prom-client');

/**
 * Lines at info on stdout, through pino's asynchronous destination in blocks of 4 KB, as the
 * service writes its request lines (pino's documented way for throughput); tokens redacted.
 */
const logger = pino(
  { level: 'info', redact: ['req.headers.authorization'] },
  pino.destination({ dest: 1, sync: false, minLength: 4096 }),
);

collectDefaultMetrics();
/** Request durations by method, route template and status, in the service's buckets. */
const requestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time from the request to the last byte of the response',
  labelNames: ['method', 'route', 'status'],
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
});

// A key object made once: given a string, jsonwebtoken first tries to read it as a PEM key.
const secret = createSecretKey(Buffer.from(process.env.JWT_SECRET ?? ''));

/**
 * The payload of the Authorization header's bearer token, verified by jsonwebtoken (HS256 over
 * the service's secret); an error with the status to answer (401 without one, 403 for a bad one).
 */
function verifyBearer(authorization = '') {
  const token = authorization.split(' ')[1];
  // `status` for Koa, `statusCode` for Fastify; `expose`: Koa answers it and does not log it as a failure.
  const refused = (status, message) => Object.assign(new Error(message), { status, statusCode: status, expose: true });
  if (!token) throw refused(401, 'no token');
  try {
    return jwt.verify(token, secret, { algorithms: ['HS256'] });
  } catch {
    throw refused(403, 'bad token');
  }
}

/** The service's compression: over 1 KB, gzip and br at level 1. */
const COMPRESSION = {
  threshold: 1024,
  gzip: { level: 1 },
  br: { params: { [constants.BROTLI_PARAM_QUALITY]: 1 } },
};

const CORS_ORIGIN = process.env.CORS_ORIGIN;

module.exports = { COMPRESSION, CORS_ORIGIN, logger, register, requestDuration, verifyBearer };
