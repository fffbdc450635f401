import koaCors from '@koa/cors';
import type Koa from 'koa';
import type { HeaderName } from './headers';

/** The request headers the routes read and the response headers they answer with (headersOf, route.ts). */
export interface CorsHeaders {
  allowed: HeaderName[];
  exposed: HeaderName[];
}

/**
 * Response headers a page may read without being told (the Fetch standard's CORS-safelisted
 * response headers), and those of the transport: not exposed.
 */
const READABLE_ANYWAY = new Set(['Cache-Control', 'Content-Type', 'Content-Length', 'Content-Encoding']);

/**
 * CORS for browser clients, off unless CORS_ORIGIN is set: to `*`, to one origin
 * (`https://app.example.com`) or to a comma-separated list of origins. Requests from other
 * origins get no CORS headers, so browsers keep the responses from them. Tokens travel in the
 * Authorization header, not in cookies, so credentials are not allowed. What a page may send and
 * read is what the routes declare (docs/reference/http.md#headers): every header a route reads is
 * allowed in a preflight, every one it answers with is exposed.
 */
export function cors(corsOrigin: string | undefined, headers: CorsHeaders): Koa.Middleware | undefined {
  if (!corsOrigin) return undefined;
  const allowed = corsOrigin
    .split(',')
    .map((origin) => origin.trim().replace(/\/+$/, ''))
    .filter(Boolean);
  const anyOrigin = allowed.includes('*');
  return koaCors({
    origin: (ctx) => {
      const origin = ctx.get('Origin');
      if (!origin) return '';
      if (anyOrigin) return '*';
      return allowed.includes(origin) ? origin : '';
    },
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowHeaders: headers.allowed,
    exposeHeaders: headers.exposed.filter((name) => !READABLE_ANYWAY.has(name)),
    maxAge: 600,
  });
}
