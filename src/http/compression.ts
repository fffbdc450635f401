import { constants } from 'node:zlib';
import compress from 'koa-compress';
import type Koa from 'koa';

/**
 * gzip or br, as the client's Accept-Encoding prefers, for compressible responses over 1 KB,
 * streamed (/bikes/all stays a stream), with Vary: Accept-Encoding. The levels are the fastest
 * ones that still meet the goal (at most 15% of the plain bytes) on /bikes/all; see the README.
 */
export function compression(): Koa.Middleware {
  return compress({
    threshold: 1024,
    gzip: { level: Number(process.env.GZIP_LEVEL ?? 1) },
    br: { params: { [constants.BROTLI_PARAM_QUALITY]: Number(process.env.BR_QUALITY ?? 1) } },
    deflate: false,
  });
}
