import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { readConfig } from '../../src/config';
import { API_ROUTES } from '../../src/api';
import { headersOf } from '../../src/http/route';
import { type Service, startService } from '../../src/server';
import { newBike } from '../support/bikes';
import { createTestDatabase } from '../support/databases';
import { CORS_SAFELISTED } from '../support/conformance';

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

function corsHeaders(res: Response): Record<string, string> {
  return Object.fromEntries([...res.headers].filter(([name]) => name.startsWith('access-control-')));
}

/** The names a CORS header lists. */
const listed = (res: Response, header: string) => new Set((res.headers.get(header) ?? '').split(','));

/**
 * What a page reads without being told (the Fetch standard's CORS-safelisted response headers),
 * the message's own framing, and the CORS headers themselves.
 */
const READABLE_ANYWAY = new Set([
  ...CORS_SAFELISTED,
  'connection',
  'content-encoding',
  'date',
  'keep-alive',
  'transfer-encoding',
  'vary',
  'access-control-allow-origin',
  'access-control-expose-headers',
]);

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
    expect(res.headers.get('allow')).toBe('HEAD, GET, POST');
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

  it('when that origin sends a preflight for a write, it answers 204 allowing the method and every header a route reads', async () => {
    const res = await preflight(svc.baseUrl, '/bikes/', APP_ORIGIN, 'POST');
    expect(res.status).toBe(204);
    expect(corsHeaders(res)).toMatchObject({
      'access-control-allow-origin': APP_ORIGIN,
      'access-control-allow-methods': 'GET,HEAD,POST,PUT,PATCH,DELETE',
      'access-control-max-age': '600',
    });
    const allowed = listed(res, 'access-control-allow-headers');
    for (const route of Object.values(API_ROUTES)) {
      for (const header of headersOf(route).request)
        expect({ header, allowed: allowed.has(header) }).toEqual({ header, allowed: true });
    }
    // The write-safety headers, by name: a browser's conditional write and idempotent retry pass the preflight.
    for (const header of ['If-Match', 'If-None-Match', 'Idempotency-Key', 'Authorization', 'Content-Type']) {
      expect(allowed.has(header)).toBe(true);
    }
    // And an EventSource's reconnection (docs/reference/browse-and-sync.md#live-updates).
    expect(allowed.has('Last-Event-ID')).toBe(true);
  });

  it('exposes to the page every header an answer carries that a page could not read anyway, on success and on error', async () => {
    const tokenText = await token(svc.baseUrl);
    const write = (method: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${svc.baseUrl}${path}`, {
        method,
        headers: {
          origin: APP_ORIGIN,
          authorization: `Bearer ${tokenText}`,
          'content-type': 'application/json',
          ...headers,
        },
        body: JSON.stringify(body),
      });
    const fields = newBike();
    const created = await write('POST', '/bikes/', fields, { 'idempotency-key': 'cors-seam' });
    const bike = (await created.clone().json()) as { id: string };
    /** An event stream, as a page's EventSource asks for it: its head, then the page leaves. */
    const streamHead = async () => {
      const leaving = new AbortController();
      const res = await fetch(`${svc.baseUrl}/bikes/changes`, {
        headers: { origin: APP_ORIGIN, accept: 'text/event-stream' },
        signal: leaving.signal,
      });
      leaving.abort();
      return res;
    };
    const answers = [
      created,
      await write('POST', '/bikes/', fields, { 'idempotency-key': 'cors-seam' }), // a replay
      await write('POST', '/bikes/', newBike(), { 'idempotency-key': 'cors-seam' }), // 422
      await write('POST', '/bikes/', { ...newBike(), title: 5 }), // 400, X-Invalid-Field
      await write('PATCH', `/bikes/${bike.id}`, { vendor: 'x' }, { 'if-match': '"stale"' }), // 412
      await fetch(`${svc.baseUrl}/bikes/${bike.id}`, { headers: { origin: APP_ORIGIN } }),
      await fetch(`${svc.baseUrl}/bikes/all`, { method: 'POST', headers: { origin: APP_ORIGIN } }), // 405, Allow
      await streamHead(),
    ];
    for (const res of answers) {
      const exposed = listed(res, 'access-control-expose-headers');
      const hidden = [...res.headers.keys()].filter(
        (name) => !READABLE_ANYWAY.has(name) && ![...exposed].some((header) => header.toLowerCase() === name),
      );
      expect({ status: res.status, hidden }).toEqual({ status: res.status, hidden: [] });
    }
    expect(answers.map((res) => res.status)).toEqual([200, 200, 422, 400, 412, 200, 405, 200]);
    expect(answers[7].headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(answers[1].headers.get('idempotent-replayed')).toBe('true');
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
