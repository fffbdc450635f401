import type Koa from 'koa';
import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { HttpError } from './errors';

/** What a route is limited by (docs/decisions.md, rule 28). */
export type LimitKind = 'tokens' | 'writes' | 'listStreams';

/**
 * The abuse limits, per client (its address: ctx.ip, which TRUST_PROXY may take from X-Forwarded-For):
 * tokens and writes per minute, counted in PostgreSQL over all instances; list streams at once,
 * counted here, as each holds this instance's connection and memory. Over a limit: 429 with
 * Retry-After and the IETF draft's RateLimit-Policy and RateLimit headers, which every answer
 * of a limited route carries. A store that fails lets a token request through (a limit is no
 * reason to refuse a token while the database is away) and fails a write as the write would.
 */
export function abuseLimits(rates: { tokens: RateLimiterAbstract; writes: RateLimiterAbstract }, listStreams: number) {
  const streaming = new Map<string, number>();

  const headers = (name: string, limiter: RateLimiterAbstract, res: RateLimiterRes) => ({
    'RateLimit-Policy': `"${name}";q=${limiter.points};w=${limiter.duration}`,
    RateLimit: `"${name}";r=${res.remainingPoints};t=${Math.ceil(res.msBeforeNext / 1000)}`,
  });

  async function consume(ctx: Koa.Context, name: 'tokens' | 'writes'): Promise<void> {
    const limiter = rates[name];
    let res: RateLimiterRes;
    try {
      res = await limiter.consume(ctx.ip);
    } catch (refused) {
      if (!(refused instanceof RateLimiterRes)) {
        // A write needs the database anyway: its store's failure is the write's 503, at once
        // rather than after a second wait for a connection. A token does not: it goes through.
        if (name === 'writes') throw refused;
        return;
      }
      const retryAfter = String(Math.max(1, Math.ceil(refused.msBeforeNext / 1000)));
      throw new HttpError(429, { ...headers(name, limiter, refused), 'Retry-After': retryAfter });
    }
    ctx.set(headers(name, limiter, res));
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
