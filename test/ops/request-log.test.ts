import { randomBytes } from 'node:crypto';
import { client, newBike } from '../support/bikes';
import { tampered } from '../support/tamper';
import { createTestDatabase } from '../support/databases';
import { spawnService, type ServiceProcess } from '../support/process';
import { waitFor } from '../support/wait';

interface LogLine {
  level: number;
  msg: string;
  requestId?: string;
  method?: string;
  path?: string;
  status?: number;
  durationMs?: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('the request log of the running service (node dist/server.js)', () => {
  let service: ServiceProcess;
  let databaseUrl: string;
  const jwtSecret = randomBytes(32).toString('base64url');

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    service = await spawnService({ DATABASE_URL: databaseUrl, JWT_SECRET: jwtSecret });
  });
  afterAll(async () => {
    service.child.kill('SIGTERM');
    await service.exited;
  });

  function requestLines(): LogLine[] {
    return service
      .output()
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as LogLine)
      .filter((line) => line.msg === 'request');
  }

  function lineFor(requestId: string): Promise<LogLine> {
    // The line is written when the response has been sent, so it may trail the response a little.
    return waitFor(`the log line of request ${requestId}`, () =>
      requestLines().find((entry) => entry.requestId === requestId),
    );
  }

  it('writes one JSON line per request with method, path, status, duration and the request id it echoes, and never a token or secret', async () => {
    const api = client(service.baseUrl);
    const issued = await api.request('POST', '/api/user', {
      body: { username: 'log-reader' },
      headers: { 'x-request-id': 'client-id-1' },
    });
    expect(issued.status).toBe(200);
    expect(issued.headers.get('x-request-id')).toBe('client-id-1');
    const { token } = (await issued.json()) as { token: string };

    const created = await api.request('POST', '/bikes/', {
      body: newBike(),
      token,
      headers: { 'x-request-id': 'client-id-2' },
    });
    expect(created.status).toBe(200);
    expect(created.headers.get('x-request-id')).toBe('client-id-2');
    const bike = (await created.json()) as { id: string };

    const read = await api.request('GET', `/bikes/${bike.id}`);
    const generatedId = read.headers.get('x-request-id') as string;
    expect(generatedId).toMatch(UUID);

    // An id that is not short and plain is not echoed (it could carry anything into the logs).
    const odd = await api.request('GET', '/bikes/all', { headers: { 'x-request-id': 'has spaces and "quotes"' } });
    expect(odd.status).toBe(200);
    await odd.arrayBuffer();
    const replacedId = odd.headers.get('x-request-id') as string;
    expect(replacedId).toMatch(UUID);

    const forged = tampered(token);
    const refused = await api.request('PATCH', `/bikes/${bike.id}`, {
      body: { totalInventory: 1 },
      token: forged,
      headers: { 'x-request-id': 'client-id-3' },
    });
    expect(refused.status).toBe(403);

    expect(await lineFor('client-id-1')).toEqual({
      level: 30,
      time: expect.any(Number),
      msg: 'request',
      requestId: 'client-id-1',
      method: 'POST',
      path: '/api/user',
      status: 200,
      durationMs: expect.any(Number),
    });
    expect(await lineFor('client-id-2')).toMatchObject({ method: 'POST', path: '/bikes/', status: 200 });
    expect(await lineFor(generatedId)).toMatchObject({ method: 'GET', path: `/bikes/${bike.id}`, status: 200 });
    expect(await lineFor(replacedId)).toMatchObject({ method: 'GET', path: '/bikes/all', status: 200 });
    expect(await lineFor('client-id-3')).toMatchObject({ method: 'PATCH', path: `/bikes/${bike.id}`, status: 403 });
    for (const line of requestLines()) expect(line.durationMs).toBeGreaterThanOrEqual(0);
    expect(requestLines().filter((line) => line.requestId === 'client-id-2')).toHaveLength(1);

    // Every line is JSON, and none carries a credential in any form.
    const output = service.output();
    const databasePassword = decodeURIComponent(new URL(databaseUrl).password);
    for (const secret of [token, forged, token.split('.')[2], jwtSecret, databasePassword].filter(Boolean)) {
      expect(output.includes(secret)).toBe(false);
    }
    expect(output).not.toMatch(/bearer/i);
  });

  it('writes no line at info for the health checks, which container engines ask every few seconds', async () => {
    const api = client(service.baseUrl);
    for (const path of ['/healthz', '/readyz']) {
      const res = await api.request('GET', path, { headers: { 'x-request-id': `health-at-info${path}` } });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    // A line written after theirs would have been: none of theirs came before it.
    await (await api.request('GET', '/bikes/all', { headers: { 'x-request-id': 'after-health' } })).arrayBuffer();
    await lineFor('after-health');
    expect(requestLines().filter((line) => line.path === '/healthz' || line.path === '/readyz')).toEqual([]);
  });
});

describe('the request log at LOG_LEVEL=debug', () => {
  let service: ServiceProcess;

  beforeAll(async () => {
    service = await spawnService({
      DATABASE_URL: await createTestDatabase(),
      JWT_SECRET: randomBytes(32).toString('base64url'),
      LOG_LEVEL: 'debug',
    });
  });
  afterAll(async () => {
    service.child.kill('SIGTERM');
    await service.exited;
  });

  it('writes the health checks as debug lines, and the other requests at info', async () => {
    const api = client(service.baseUrl);
    for (const [path, id] of [
      ['/healthz', 'health-1'],
      ['/readyz', 'health-2'],
      ['/bikes/all', 'other-1'],
    ]) {
      await (await api.request('GET', path, { headers: { 'x-request-id': id } })).arrayBuffer();
    }
    const lineOf = (id: string) => () =>
      service
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as LogLine)
        .find((line) => line.msg === 'request' && line.requestId === id);
    expect(await waitFor('the /healthz line', lineOf('health-1'))).toMatchObject({
      level: 20,
      path: '/healthz',
    });
    expect(await waitFor('the /readyz line', lineOf('health-2'))).toMatchObject({ level: 20, path: '/readyz' });
    expect(await waitFor('the /bikes/all line', lineOf('other-1'))).toMatchObject({
      level: 30,
      path: '/bikes/all',
    });
  });
});
