import koaCors from '@koa/cors';
import type Koa from 'koa';
import { INVALID_FIELD_HEADER } from './invalid-field';

/**
 * CORS for browser clients, off unless CORS_ORIGIN is set: to `*`, to one origin
 * (`https://app.example.com`) or to a comma-separated list of origins. Requests from other
 * origins get no CORS headers, so browsers keep the responses from them. Tokens travel in the
 * Authorization header, not in cookies, so credentials are not allowed. A page may ask for the
 * primary (X-Read-From) and read the ETag, and which field a 400 refused.
 */
export function cors(corsOrigin: string | undefined): Koa.Middleware | undefined {
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
    allowHeaders: ['Authorization', 'Content-Type', 'X-Request-Id', 'X-Read-From'],
    exposeHeaders: ['X-Request-Id', 'Allow', 'Retry-After', 'ETag', INVALID_FIELD_HEADER],
    maxAge: 600,
  });
}
