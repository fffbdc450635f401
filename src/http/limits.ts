import type Koa from 'koa';
import type { Admission, SharedLimit } from '../db/rate-limits';
import { clientOf } from './client-address';
import { HttpError } from './errors';

/** What a route is limited by (docs/decisions.md#abuse-limits); an event stream by `eventStreams`. */
export type LimitKind = 'tokens' | 'writes' | 'listStreams' | 'eventStreams';

/** How many answers of each kind one client may be receiving at once, on this instance. */
export interface StreamLimits {
  listStreams: number;
  eventStreams: number;
}

/**
 * The abuse limits, per client (clientOf: its address, which TRUST_PROXY may take from
 * X-Forwarded-For, an IPv6 one as its /64): tokens and writes per minute, counted over all instances (rate-limits.ts);
 * list streams and event streams at once, counted here, as each holds this instance's connection
 * and memory. Over a limit: 429 with Retry-After; every answer of a route limited per minute,
 * errors included, carries the IETF draft's RateLimit-Policy and RateLimit headers (a refused
 * request spent its quota too).
 */
export function abuseLimits(rates: { tokens: SharedLimit; writes: SharedLimit }, streams: StreamLimits) {
  const headers = (name: string, limit: SharedLimit, admission: Admission) => ({
    'RateLimit-Policy': `"${name}";q=${limit.limit};w=${limit.windowSeconds}`,
    RateLimit: `"${name}";r=${admission.remaining};t=${admission.resetSeconds}`,
  });

  async function consume(ctx: Koa.Context, name: 'tokens' | 'writes'): Promise<void> {
    const limit = rates[name];
    const admission = await limit.admit(clientOf(ctx));
    if (!admission.admitted) {
      throw new HttpError(429, { ...headers(name, limit, admission), 'Retry-After': String(admission.resetSeconds) });
    }
    ctx.set(headers(name, limit, admission));
  }

  /** Answers of one kind a client may be receiving at once: one more until its answer ends. */
  function atOnce(max: number) {
    const open = new Map<string, number>();
    return (ctx: Koa.Context): void => {
      const client = clientOf(ctx);
      const count = open.get(client) ?? 0;
      if (count >= max) throw new HttpError(429, { 'Retry-After': '1' });
      open.set(client, count + 1);
      ctx.res.once('close', () => {
        const left = (open.get(client) ?? 1) - 1;
        if (left === 0) open.delete(client);
        else open.set(client, left);
      });
    };
  }
  const opening = { listStreams: atOnce(streams.listStreams), eventStreams: atOnce(streams.eventStreams) };

  return {
    async check(ctx: Koa.Context, kind: LimitKind): Promise<void> {
      if (kind === 'tokens' || kind === 'writes') await consume(ctx, kind);
      else opening[kind](ctx);
    },
  };
}

export type AbuseLimits = ReturnType<typeof abuseLimits>;
