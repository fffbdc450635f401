import type Koa from 'koa';
import type { Admission, SharedLimit } from '../db/rate-limits';
import { HttpError } from './errors';

/** What a route is limited by (docs/decisions.md#abuse-limits). */
export type LimitKind = 'tokens' | 'writes' | 'listStreams';

/**
 * The abuse limits, per client (its address: ctx.ip, which TRUST_PROXY may take from
 * X-Forwarded-For): tokens and writes per minute, counted over all instances (rate-limits.ts);
 * list streams at once, counted here, as each holds this instance's connection and memory. Over
 * a limit: 429 with Retry-After; every answer of a route limited per minute, errors included,
 * carries the IETF draft's RateLimit-Policy and RateLimit headers (a refused request spent its
 * quota too).
 */
export function abuseLimits(rates: { tokens: SharedLimit; writes: SharedLimit }, listStreams: number) {
  const streaming = new Map<string, number>();

  const headers = (name: string, limit: SharedLimit, admission: Admission) => ({
    'RateLimit-Policy': `"${name}";q=${limit.limit};w=${limit.windowSeconds}`,
    RateLimit: `"${name}";r=${admission.remaining};t=${admission.resetSeconds}`,
  });

  async function consume(ctx: Koa.Context, name: 'tokens' | 'writes'): Promise<void> {
    const limit = rates[name];
    const admission = await limit.admit(ctx.ip);
    if (!admission.admitted) {
      throw new HttpError(429, { ...headers(name, limit, admission), 'Retry-After': String(admission.resetSeconds) });
    }
    ctx.set(headers(name, limit, admission));
  }

  /** One more list the client is receiving, until its answer ends. */
  function openStream(ctx: Koa.Context): void {
    const client = ctx.ip;
    const open = streaming.get(client) ?? 0;
    if (open >= listStreams) throw new HttpError(429, { 'Retry-After': '1' });
    streaming.set(client, open + 1);
    ctx.res.once('close', () => {
      const left = (streaming.get(client) ?? 1) - 1;
      if (left === 0) streaming.delete(client);
      else streaming.set(client, left);
    });
  }

  return {
    async check(ctx: Koa.Context, kind: LimitKind): Promise<void> {
      if (kind === 'listStreams') openStream(ctx);
      else await consume(ctx, kind);
    },
  };
}

export type AbuseLimits = ReturnType<typeof abuseLimits>;
