import net from 'node:net';
import type Koa from 'koa';
import type { Admission, SharedLimit } from '../db/rate-limits';
import { HttpError } from './errors';

/** What a route is limited by (docs/reference/callers.md#abuse-limits); an event stream by `eventStreams`. */
export type LimitKind = 'tokens' | 'writes' | 'listStreams' | 'eventStreams';

/** How many answers of each kind one client may be receiving at once, on this instance. */
export interface StreamLimits {
  listStreams: number;
  eventStreams: number;
}

/**
 * The client a request is counted against (docs/reference/callers.md#trusted-proxies): its address
 * (ctx.ip, which TRUST_PROXY takes from X-Forwarded-For; an entry there that is no address is
 * none, and the connection's peer is counted instead), an IPv6 address by its /64, the block one
 * host is given, and an IPv4-mapped one as the IPv4 address it is.
 */
function clientOf(ctx: Koa.Context): string {
  const address = net.isIP(ctx.ip) ? ctx.ip : (ctx.socket.remoteAddress ?? '');
  if (!net.isIPv6(address)) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  return `${ipv6Groups(address).slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, without leading zeros ('::' expanded, a zone or a dotted tail read). */
function ipv6Groups(address: string): string[] {
  const groupsOf = (part: string) =>
    part === '' ? [] : part.split(':').flatMap((group) => (group.includes('.') ? ['0', '0'] : [group]));
  const [head, tail] = address.split('%')[0].split('::');
  const left = groupsOf(head);
  const right = tail === undefined ? [] : groupsOf(tail);
  const zeros: string[] = Array(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => parseInt(group, 16).toString(16));
}

/**
 * The abuse limits, per client (clientOf): tokens and writes per minute, counted over all instances (rate-limits.ts);
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
