import iconv from 'iconv-lite';
import type Koa from 'koa';
import bodyParser from 'koa-bodyparser';
import getRawBody from 'raw-body';
import typeis from 'type-is';
import { HttpError } from './errors';
import { ACCEPTED_CONTENT_CODINGS } from './headers';
import { numberWithoutDouble } from './json-numbers';
import { inviteBody } from './listener';

const BODY_LIMIT_BYTES = 1024 * 1024;
const BODY_LIMIT = '1mb';

const JSON_TYPES = ['application/json', 'application/*+json'];
const FORM_TYPES = ['application/x-www-form-urlencoded'];
/** Names iconv-lite decodes that are not character sets. */
const NOT_CHARSETS = new Set(['base64', 'hex']);
/** Encodings of all of Unicode: only in these may a body carry U+FFFD itself. */
const UNICODE_CHARSET = /^(utf-?(8|16|32)|ucs-?2|cesu-?8|utf-?7|gb18030)/;

/**
 * The content codings a body may come in, by the name inflation (under co-body) decodes them by:
 * `x-gzip` is gzip (RFC 9110 8.4.1.3), and names are case-insensitive. Any other coding, or more
 * than one, is 415 (docs/reference/requests-and-answers.md#content-codings).
 */
const CONTENT_CODINGS: Record<string, string> = {
  identity: 'identity',
  gzip: 'gzip',
  'x-gzip': 'gzip',
  deflate: 'deflate',
  br: 'br',
};

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

function parserFor(charset: string): Koa.Middleware {
  let parser = parsers.get(charset);
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
    });
    parsers.set(charset, parser);
  }
  return parser;
}

/**
 * The body of a request, as docs/reference/requests-and-answers.md#bodies and docs/reference/bike.md#numbers read it: `{}` when empty; refused
 * with `invalid` (400, or 404 on PUT) when it cannot be read faithfully (a number with no nearest
 * double included); 413 over 1 MB, and 415 in a coding it cannot decode, both unread.
 */
export async function readBody(ctx: Koa.Context, invalid: number): Promise<unknown> {
  // Closing after a 413, or after a body abandoned half-read (bad gzip), keeps the unread rest
  // from being taken for the next request.
  const refuse = (err?: { status?: number }) =>
    err?.status === 413
      ? new HttpError(413, { Connection: 'close' })
      : new HttpError(invalid, ctx.req.complete ? {} : { Connection: 'close' });

  if (Number(ctx.get('Content-Length')) > BODY_LIMIT_BYTES) throw refuse({ status: 413 });
  // Not a failure of what the body says, on any route (PUT's 404 included): a body we cannot
  // decode at all is an unsupported media (RFC 9110 15.5.16; docs/reference/requests-and-answers.md#content-codings).
  const coding = CONTENT_CODINGS[ctx.get('Content-Encoding').trim().toLowerCase() || 'identity'];
  if (coding === undefined) {
    // Unread, like a 413's: the connection closes rather than carry the rest.
    throw new HttpError(415, { 'Accept-Encoding': ACCEPTED_CONTENT_CODINGS, Connection: 'close' });
  }
  // inflation reads the coding from the header itself, and knows each by one lowercase name.
  ctx.req.headers['content-encoding'] = coding;
  // Everything the headers decide has been decided: a client waiting to send the body may now.
  inviteBody(ctx.res);
  const { kind, charset } = mediaTypeOf(ctx.get('Content-Type'));
  if (kind === undefined) {
    // Read to its end, so the connection stays usable; only an empty one is acceptable.
    const raw = await getRawBody(ctx.req, { limit: BODY_LIMIT_BYTES }).catch((err: { status?: number }) => {
      throw refuse(err);
    });
    if (raw.length > 0) throw refuse();
    return {};
  }
  await parserFor(charset)(ctx, async () => undefined).catch((err: { status?: number }) => {
    throw refuse(err);
  });
  const text: unknown = ctx.request.rawBody;
  // Unread (the parser judged the type otherwise), or a byte its charset does not define, which
  // iconv-lite turned into U+FFFD: either way not the client's data.
  if (typeof text !== 'string' || (!UNICODE_CHARSET.test(charset) && text.includes('\uFFFD'))) throw refuse();
  // A number JSON.parse turned into 0 or Infinity (1e-400, 1e400), anywhere in the body: not
  // the client's number either (docs/reference/bike.md#numbers).
  if (kind === 'json' && numberWithoutDouble(text) !== undefined) throw refuse();
  return ctx.request.body;
}
