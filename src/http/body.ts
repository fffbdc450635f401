import iconv from 'iconv-lite';
import type Koa from 'koa';
import bodyParser from 'koa-bodyparser';
import getRawBody from 'raw-body';
import typeis from 'type-is';
import { HttpError, setInvalidInputStatus } from './errors';

export const BODY_LIMIT_BYTES = 1024 * 1024;
const BODY_LIMIT = '1mb';

/** Closing after a 413 keeps the unread rest of the body from being taken for the next request. */
const tooLarge = () => new HttpError(413, { Connection: 'close' });

/** A refused body; one abandoned half-read (bad gzip) cannot be told from the next request. */
const refused = (ctx: Koa.Context, status: number) =>
  new HttpError(status, ctx.req.complete ? {} : { Connection: 'close' });

/** Names iconv-lite decodes that are not character sets. */
const NOT_CHARSETS = new Set(['base64', 'hex']);
/** Encodings of all of Unicode: only in these may a body carry U+FFFD itself. */
const UNICODE_CHARSET = /^(utf-?(8|16|32)|ucs-?2|cesu-?8|utf-?7|gb18030)/;

const JSON_TYPES = ['application/json', 'application/*+json'];
const FORM_TYPES = ['application/x-www-form-urlencoded'];

/** What the body is read as (JSON, form fields, or neither: undefined), and in which charset. */
function mediaTypeOf(header: string): { kind: 'json' | 'form' | undefined; charset: string } {
  // A trailing ";" is forgiven, as koa-bodyparser forgives it.
  const type = header.replace(/;\s*$/, '');
  const charset = (/;\s*charset\s*=\s*"?([^";\s]+)/i.exec(type)?.[1] ?? 'utf-8').toLowerCase();
  if (!iconv.encodingExists(charset) || NOT_CHARSETS.has(charset)) return { kind: undefined, charset };
  if (typeis.is(type, JSON_TYPES)) return { kind: 'json', charset };
  if (typeis.is(type, FORM_TYPES)) return { kind: 'form', charset };
  return { kind: undefined, charset };
}

/** One body parser per charset: koa-bodyparser decodes a whole body with one (through iconv-lite). */
const parsers = new Map<string, Koa.Middleware>();

function parserFor(charset: string, invalidStatus: number): Koa.Middleware {
  const key = `${charset} ${invalidStatus}`;
  let parser = parsers.get(key);
  if (!parser) {
    parser = bodyParser({
      enableTypes: ['json', 'form'],
      extendTypes: { json: JSON_TYPES },
      jsonLimit: BODY_LIMIT,
      formLimit: BODY_LIMIT,
      strict: true,
      // Passed on to co-body, though the types do not list them. The charset decodes the body
      // (raw-body, iconv-lite), and a form's percent-escapes (qs knows UTF-8 and ISO-8859-1); a
      // "__proto__" key is dropped like any unknown field, not refused.
      ...({
        encoding: charset,
        queryString: { allowDots: true, charset: UNICODE_CHARSET.test(charset) ? 'utf-8' : 'iso-8859-1' },
        onProtoPoisoning: 'remove',
      } as object),
      onerror(err: Error & { status?: number }, ctx: Koa.Context) {
        throw err.status === 413 ? tooLarge() : refused(ctx, invalidStatus);
      },
    });
    parsers.set(key, parser);
  }
  return parser;
}

/**
 * Reads a body of at most 1 MB into ctx.request.body (DECISIONS rule 12): JSON for
 * application/json and every application/*+json, form fields for
 * application/x-www-form-urlencoded, decoded from its charset (UTF-8 when none is given). An
 * empty body, whatever its type, reads as `{}`; any other non-empty body, one in a charset
 * that cannot be decoded, and malformed JSON get `invalidStatus`: 400, or 404 where the
 * specification says so (PUT), as does any value the database refuses later. A body over 1 MB
 * gets 413 without being read whole, and the connection is closed.
 */
export function readBody(invalidStatus: number): Koa.Middleware {
  return async (ctx, next) => {
    setInvalidInputStatus(ctx, invalidStatus);
    if (Number(ctx.get('Content-Length')) > BODY_LIMIT_BYTES) throw tooLarge();
    const { kind, charset } = mediaTypeOf(ctx.get('Content-Type'));
    if (kind === undefined) {
      // Read to its end (so the connection stays usable), but never used: only absence is fine.
      const raw = await getRawBody(ctx.req, { limit: BODY_LIMIT_BYTES }).catch((err: { status?: number }) => {
        throw err.status === 413 ? tooLarge() : refused(ctx, invalidStatus);
      });
      if (raw.length > 0) throw refused(ctx, invalidStatus);
      ctx.request.body = {};
      return next();
    }
    return parserFor(charset, invalidStatus)(ctx, async () => {
      const text: unknown = ctx.request.rawBody;
      // Unread (the parser judged the type otherwise), or a byte its charset does not define,
      // which iconv-lite turned into U+FFFD: either way not the client's data.
      if (typeof text !== 'string' || (!UNICODE_CHARSET.test(charset) && text.includes('\uFFFD'))) {
        throw refused(ctx, invalidStatus);
      }
      await next();
    });
  };
}
