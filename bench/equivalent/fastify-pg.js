'use strict';

/**
 * Fastify + pg with the service's features, from Fastify itself and its plugins: its logger
 * (pino) at info with a request id, sent as X-Request-Id; @fastify/cors for one origin;
 * @fastify/compress over 1 KB at level 1; @fastify/etag, with its 304s; a prom-client histogram
 * of request durations by route and status. Writes need a bearer token (jsonwebtoken), and
 * bodies are checked by Fastify's own validation, against the JSON Schema of the service's yup
 * schemas, with no coercion; answers are written from that schema (fast-json-stringify). The
 * baseline's SQL and JSON (../minimal/sql.js).
 *
 *   DATABASE_URL=... JWT_SECRET=... CORS_ORIGIN=... PORT=... node bench/equivalent/fastify-pg.js
 */
const { randomUUID } = require('node:crypto');
const fastifyCompress = require('@fastify/compress');
const fastifyCors = require('@fastify/cors');
const fastifyEtag = require('@fastify/etag');
const Fastify = require('fastify');
const { Pool } = require('pg');
const { bike, bikeFields, patch, replacement } = require('../../dist/bikes/bike.js');
const { toJsonSchema } = require('../../dist/http/json-schema.js');
const { SQL, deriveHandle, insertValues, patchValues, searchRows, toBike } = require('../minimal/sql');
const { COMPRESSION, CORS_ORIGIN, logger, register, requestDuration, verifyBearer } = require('./features');

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const app = Fastify({
  loggerInstance: logger,
  genReqId: () => randomUUID(),
  requestIdHeader: 'x-request-id',
  ajv: { customOptions: { coerceTypes: false } },
});

async function one(reply, text, values) {
  const { rows } = await pool.query(text, values);
  if (rows.length === 0) return reply.code(404).send();
  return toBike(rows[0]);
}

const ok = { 200: toJsonSchema(bike) };
const write = (body) => ({
  schema: { body: toJsonSchema(body), response: ok },
  onRequest: async (req) => {
    req.user = verifyBearer(req.headers.authorization);
  },
});

app.addHook('onRequest', async (req, reply) => {
  reply.header('X-Request-Id', req.id);
});
app.addHook('onResponse', async (req, reply) => {
  const labels = { method: req.method, route: req.routeOptions.url ?? 'unmatched', status: reply.statusCode };
  requestDuration.observe(labels, reply.elapsedTime / 1000);
});
app.register(fastifyCors, { origin: CORS_ORIGIN });
app.register(fastifyCompress, {
  threshold: COMPRESSION.threshold,
  encodings: ['gzip', 'br'],
  zlibOptions: COMPRESSION.gzip,
  brotliOptions: COMPRESSION.br,
});
app.register(fastifyEtag);
app.register(async (api) => {
  api.get('/bikes/search/by-title', { schema: { response: { 200: { type: 'array', items: ok[200] } } } }, async (req) =>
    (await searchRows(pool, String(req.query.query ?? ''))).map(toBike),
  );
  api.get('/bikes/by-handle/:handle', { schema: { response: ok } }, (req, reply) =>
    one(reply, SQL.firstByHandle, [req.params.handle]),
  );
  api.get('/bikes/:id', { schema: { response: ok } }, (req, reply) =>
    one(reply, SQL.byId, [req.params.id.toLowerCase()]),
  );
  api.post('/bikes/', write(bikeFields), (req, reply) =>
    one(reply, SQL.create, insertValues({ ...req.body, id: randomUUID(), handle: deriveHandle(req.body.title) })),
  );
  api.put('/bikes/:id', write(replacement), (req, reply) =>
    one(reply, SQL.replace, insertValues({ ...req.body, id: req.params.id.toLowerCase() })),
  );
  api.patch('/bikes/:id', write(patch), (req, reply) =>
    one(reply, SQL.patch, patchValues(req.params.id.toLowerCase(), req.body)),
  );
  api.get('/metrics', async (_req, reply) => reply.type(register.contentType).send(await register.metrics()));
});

app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' }).then(() => logger.info('fastify listening'));
const stop = () => app.close().then(() => pool.end().then(() => process.exit(0)));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
