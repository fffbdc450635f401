'use strict';

/**
 * A minimal Fastify + pg server, the framework's defaults: GET by id, GET by handle and POST, on
 * the same SQL and with the same JSON as the baseline.   DATABASE_URL=... PORT=3004 node bench/minimal/fastify-pg.js
 */
const { randomUUID } = require('node:crypto');
const Fastify = require('fastify');
const { Pool } = require('pg');
const { SQL, deriveHandle, insertValues, toBike } = require('./sql');

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const app = Fastify({ logger: false });

async function one(reply, text, values) {
  const { rows } = await pool.query(text, values);
  if (rows.length === 0) return reply.code(404).send();
  return toBike(rows[0]);
}

app.get('/bikes/by-handle/:handle', (req, reply) => one(reply, SQL.firstByHandle, [req.params.handle]));
app.get('/bikes/:id', (req, reply) => one(reply, SQL.byId, [req.params.id.toLowerCase()]));
app.post('/bikes/', (req, reply) =>
  one(reply, SQL.create, insertValues({ ...req.body, id: randomUUID(), handle: deriveHandle(req.body.title) })),
);

app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' }).then(() => console.log('fastify-pg listening'));
const stop = () => app.close().then(() => pool.end().then(() => process.exit(0)));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
