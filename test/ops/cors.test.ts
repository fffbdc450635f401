import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { readConfig } from '../../src/config';
import { type Service, startService } from '../../src/server';
import { newBike } from '../support/bikes';
import { createTestDatabase } from '../support/databases';

const APP_ORIGIN = 'https://shop.example.com';
const OTHER_ORIGIN = 'https://elsewhere.example.net';

/** The service as `npm start` builds it from its environment, with CORS_ORIGIN as given. */
async function startWithEnv(env: Record<string, string>): Promise<{ baseUrl: string; service: Service }> {
  const config = readConfig({
    PORT: '0',
    DATABASE_URL: await createTestDatabase(),
    JWT_SECRET: randomBytes(32).toString('base64url'),
    ...env,
  });
  const service = await startService(config, pino({ level: 'silent' }));
  return { baseUrl: `http://127.0.0.1:${service.port}`, service };
}

function preflight(baseUrl: string, path: string, origin: string, method: string): Promise<Response> {
  return fetch(`${baseUrl}${path}`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization,content-type',
    },
  });
}

async function token(baseUrl: string): Promise<string> {
  const res = await fetch(`${baseUrl}/api/user`, { method: 'POST' });
  return ((await res.json()) as { token: string }).token;
}

/** POST /bikes/ with a token, as a page on APP_ORIGIN sends it. */
async function createFromApp(baseUrl: string, body: unknown): Promise<Response> {
  return fetch(`${baseUrl}/bikes/`, {
    method: 'POST',
    headers: {
      origin: APP_ORIGIN,
      authorization: `Bearer ${await token(baseUrl)}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });
}

function corsHeaders(res: Response): Record<string, string> {
  return Object.fromEntries([...res.headers].filter(([name]) => name.startsWith('access-control-')));
}

describe('CORS when CORS_ORIGIN is not set', () => {
  let svc: { baseUrl: string; service: Service };
  beforeAll(async () => {
    svc = await startWithEnv({});
  });
  afterAll(() => svc.service.stop());

  it('when a browser sends an Origin, the response carries no CORS header', async () => {
    const res = await fetch(`${svc.baseUrl}/bikes/all`, { headers: { origin: APP_ORIGIN } });
    expect(res.status).toBe(200);
    expect(corsHeaders(res)).toEqual({});
  });

  it('when a browser sends a preflight, it answers as for any OPTIONS (204 with Allow) but grants nothing', async () => {
    const res = await preflight(svc.baseUrl, '/bikes/', APP_ORIGIN, 'POST');
    expect(res.status).toBe(204);
    expect(res.headers.get('allow')).toBe('POST');
    expect(corsHeaders(res)).toEqual({});
  });
});

describe('CORS when CORS_ORIGIN names one origin', () => {
  let svc: { baseUrl: string; service: Service };
  beforeAll(async () => {
    // A trailing slash in the setting is forgiven: browsers never send one in Origin.
    svc = await startWithEnv({ CORS_ORIGIN: `${APP_ORIGIN}/` });
  });
  afterAll(() => svc.service.stop());

  it('when that origin sends a preflight for a write, it answers 204 allowing the method and the Authorization header', async () => {
    const res = await preflight(svc.baseUrl, '/bikes/', APP_ORIGIN, 'POST');
    expect(res.status).toBe(204);
    expect(corsHeaders(res)).toEqual({
      'access-control-allow-origin': APP_ORIGIN,
      'access-control-allow-methods': 'GET,HEAD,POST,PUT,PATCH,DELETE',
      'access-control-allow-headers': 'Authorization,Content-Type,X-Request-Id,X-Read-From',
      'access-control-max-age': '600',
    });
    expect(res.headers.get('vary')).toMatch(/Origin/);
  });

  it('when that origin then sends the write with a token, it answers 200 and exposes X-Request-Id to the page', async () => {
    const res = await createFromApp(svc.baseUrl, newBike());
    expect(res.status).toBe(200);
    expect(corsHeaders(res)).toEqual({
      'access-control-allow-origin': APP_ORIGIN,
      'access-control-expose-headers': 'X-Request-Id,Allow,Retry-After,ETag,X-Invalid-Field',
    });
  });

  it('when that origin gets an error (401), the page may read the status: the CORS headers are there too', async () => {
    const res = await fetch(`${svc.baseUrl}/bikes/`, { method: 'POST', headers: { origin: APP_ORIGIN } });
    expect(res.status).toBe(401);
    expect(res.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);
  });

  it('when that origin gets a 400, the page may read which field failed: X-Invalid-Field is exposed', async () => {
    const res = await createFromApp(svc.baseUrl, { ...newBike(), totalInventory: '5' });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe('Bad Request');
    expect(res.headers.get('x-invalid-field')).toBe('totalInventory');
    expect(corsHeaders(res)).toEqual({
      'access-control-allow-origin': APP_ORIGIN,
      'access-control-expose-headers': 'X-Request-Id,Allow,Retry-After,ETag,X-Invalid-Field',
    });
  });

  it('when another origin asks, it grants nothing', async () => {
    const read = await fetch(`${svc.baseUrl}/bikes/all`, { headers: { origin: OTHER_ORIGIN } });
    expect(read.status).toBe(200);
    expect(corsHeaders(read)).toEqual({});
    const pre = await preflight(svc.baseUrl, '/bikes/', OTHER_ORIGIN, 'POST');
    expect(corsHeaders(pre)).toEqual({});
  });

  it('when a request has no Origin (curl, another server), it answers as usual, without CORS headers', async () => {
    const res = await fetch(`${svc.baseUrl}/bikes/all`);
    expect(res.status).toBe(200);
    expect(corsHeaders(res)).toEqual({});
  });
});

describe('CORS when CORS_ORIGIN is a list, or *', () => {
  it('when CORS_ORIGIN lists two origins, each of them is allowed and a third is not', async () => {
    const svc = await startWithEnv({ CORS_ORIGIN: `${APP_ORIGIN}, http://localhost:5173` });
    try {
      for (const origin of [APP_ORIGIN, 'http://localhost:5173']) {
        const res = await fetch(`${svc.baseUrl}/bikes/all`, { headers: { origin } });
        expect(res.headers.get('access-control-allow-origin')).toBe(origin);
      }
      const other = await fetch(`${svc.baseUrl}/bikes/all`, { headers: { origin: OTHER_ORIGIN } });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await svc.service.stop();
    }
  });

  it('when CORS_ORIGIN is *, any origin may call, preflight included', async () => {
    const svc = await startWithEnv({ CORS_ORIGIN: '*' });
    try {
      const res = await fetch(`${svc.baseUrl}/bikes/all`, { headers: { origin: OTHER_ORIGIN } });
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      const pre = await preflight(svc.baseUrl, '/bikes/00000000-0000-4000-8000-000000000000', OTHER_ORIGIN, 'DELETE');
      expect(pre.status).toBe(204);
      expect(corsHeaders(pre)).toMatchObject({
        'access-control-allow-origin': '*',
        'access-control-allow-methods': expect.stringContaining('DELETE'),
      });
    } finally {
      await svc.service.stop();
    }
  });
});
