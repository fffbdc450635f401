import { pipeline, Readable, Stream } from 'node:stream';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import compressible from 'compressible';
import type Koa from 'koa';
import { codedTag, isFresh } from './conditional';

/**
 * The last step of every answer (docs/reference/caching-and-conditions.md#compression): the content coding it goes out
 * in, and from that its ETag and whether it is a 304. GET, HEAD and the 304 of a resource are made
 * here by the same decision, so they carry the same validators and representation headers.
 *
 * gzip or br, as the client's Accept-Encoding prefers (gzip on a tie), for compressible answers
 * over 1 KB or streamed; level 1 of each: measured on /bikes/all at 100,000 bikes, both bring
 * 51.2 MB down to 13.9% in about 1.1 times the plain time to last byte; gzip 6 or br 4 save
 * another 3% of the bytes for 1.3 to 1.6 times the time (docs/performance.md).
 */

const THRESHOLD_BYTES = 1024;

type Coding = 'gzip' | 'br';

const OPTIONS = {
  gzip: { level: 1 },
  br: { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 1 } },
} as const;

const compressBuffer = { gzip: promisify(zlib.gzip), br: promisify(zlib.brotliCompress) };
const compressStream = { gzip: () => zlib.createGzip(OPTIONS.gzip), br: () => zlib.createBrotliCompress(OPTIONS.br) };

/** A content coding's weight in Accept-Encoding: its `q`, 1 when not given. */
function weightOf(params: string[]): number {
  const q = params.map((param) => /^\s*q\s*=\s*([\d.]+)\s*$/.exec(param)?.[1]).find((value) => value !== undefined);
  const weight = q === undefined ? 1 : Number(q);
  return weight >= 0 && weight <= 1 ? weight : 1;
}

/**
 * The coding of ours the client prefers (RFC 9110, 12.5.3): the higher `q` of gzip (`x-gzip`
 * too, 8.4.1.3) and br, gzip on a tie, each taking `*`'s when not named; none without the field,
 * or when neither is acceptable (then the answer goes out unencoded, as RFC 9110 allows, rather
 * than a 406 for a read).
 */
function preferredCoding(acceptEncoding: string | undefined): Coding | undefined {
  if (!acceptEncoding) return undefined;
  const weights = new Map<string, number>();
  for (const element of acceptEncoding.toLowerCase().split(',')) {
    const [name, ...params] = element.split(';');
    const coding = name.trim() === 'x-gzip' ? 'gzip' : name.trim();
    weights.set(coding, Math.max(weights.get(coding) ?? 0, weightOf(params)));
  }
  const any = weights.get('*') ?? 0;
  const gzip = weights.get('gzip') ?? any;
  const br = weights.get('br') ?? any;
  if (Math.max(gzip, br) <= 0) return undefined;
  return br > gzip ? 'br' : 'gzip';
}

/** The coding this answer goes out in, for GET and HEAD alike. */
function codingOf(ctx: Koa.Context): Coding | undefined {
  const { body } = ctx;
  if (body == null || ctx.status === 204 || ctx.status === 304 || ctx.res.hasHeader('Content-Encoding'))
    return undefined;
  if (!(body instanceof Stream) && (ctx.response.length ?? 0) < THRESHOLD_BYTES) return undefined;
  if (!compressible(ctx.response.type)) return undefined;
  return preferredCoding(ctx.req.headers['accept-encoding']);
}

export function representation(): Koa.Middleware {
  return async (ctx, next) => {
    ctx.vary('Accept-Encoding');
    await next();
    // JSON of an object, as Koa would write it, so that its length is known here.
    if (
      ctx.body !== null &&
      typeof ctx.body === 'object' &&
      !(ctx.body instanceof Stream) &&
      !Buffer.isBuffer(ctx.body)
    ) {
      ctx.body = JSON.stringify(ctx.body);
    }
    const coding = codingOf(ctx);
    const given = ctx.res.getHeader('ETag');
    const tag = typeof given === 'string' && coding ? codedTag(given, coding) : given;
    if (typeof tag === 'string' && tag !== given) ctx.set('ETag', tag);
    // A read whose copy the client has, judged by the tag the 200 would carry.
    const read = ctx.method === 'GET' || ctx.method === 'HEAD';
    if (read && ctx.status === 200 && typeof tag === 'string' && isFresh(ctx, tag)) {
      if (ctx.body instanceof Readable) ctx.body.destroy();
      ctx.status = 304;
      return;
    }
    if (coding === undefined) return;
    const { body } = ctx;
    ctx.set('Content-Encoding', coding);
    if (body instanceof Readable) {
      ctx.remove('Content-Length');
      // A HEAD sends no body: the stream ends with the response, unread.
      if (ctx.method === 'HEAD') return;
      ctx.body = pipeline(body, compressStream[coding](), () => undefined);
      return;
    }
    // A body in hand is compressed whole, for GET and HEAD alike, so both say the same length.
    if (typeof body === 'string' || Buffer.isBuffer(body))
      ctx.body = await compressBuffer[coding](body, OPTIONS[coding]);
  };
}
