import zlib from 'node:zlib';
import { eventStreamReader } from './event-stream';
import { schemaErrors } from './json-schema';

/**
 * The checker that keeps the OpenAPI document and the answers from drifting apart
 * (docs/development.md says when it runs): given the document a service serves and
 * one exchange with it, what of the answer the document does not describe.
 *
 * Which part of the document an answer is judged by:
 * - The operation of its method and path, matched as OpenAPI matches (the path first, literal
 *   paths before templated ones, then the method: a method the literal path does not serve is
 *   not the templated path's, as the service routes: docs/reference/http.md#path-matching), a path
 *   with or without its trailing slash (docs/reference/http.md#trailing-slash). HEAD is its GET without the body (RFC 9110 9.3.2) unless
 *   the document has a `head` operation.
 * - Any other request (a path the document does not have, a method no operation of the path
 *   serves, OPTIONS, a request line that is no request) is judged by the responses of
 *   `x-unmatched-requests` at the document's root, an extension shaped like an operation: its
 *   404, its 405 (whose Allow must name exactly the methods the document serves at the path),
 *   OPTIONS's 204 (a preflight's too), and what the HTTP parser answers such a request. The
 *   operator's routes and the docs page are operations of the document (tag `operations`).
 * - What the listener or node's parser answers before routing (400 for two Host lines, 408, 413,
 *   417, 431) is judged by the operation the request line names, like any answer: the document
 *   declares it there, as it declares 431.
 *
 * What is checked of the answer: its status is declared; every header declared `required` is
 * there; every header it carries is declared for that status, or is HTTP's own (HTTP_OWN) or
 * CORS's (judged by corsViolations); each declared header's value against its schema; and the
 * body against the schema of its media type: JSON parsed, text as a string, an event stream's
 * events one by one (each `data` an item of the JSON list the same answer gives as a page), a
 * body in a content coding decoded first. A body that did not arrive whole is judged only as far
 * as it came: its whole events, no JSON. An event stream must answer a request that accepts one.
 */

type Json = Record<string, unknown>;

interface HeaderObject {
  required?: boolean;
  schema?: Json;
}

interface MediaTypeObject {
  schema?: Json;
}

interface ResponseObject {
  headers?: Record<string, HeaderObject>;
  content?: Record<string, MediaTypeObject>;
}

interface Operation {
  operationId?: string;
  security?: Record<string, string[]>[];
  parameters?: Json[];
  requestBody?: Json;
  responses: Record<string, ResponseObject>;
}

export interface OpenApiDocument {
  paths: Record<string, Partial<Record<string, Operation>>>;
  components?: Json;
  'x-unmatched-requests'?: { responses: Record<string, ResponseObject> };
}

/** One request and the answer it got, as they went over the wire. */
export interface Exchange {
  request: {
    /** As sent; '' when what was sent is no request line. */
    method: string;
    /** The request target as sent: a path and query, an absolute URL, or `*`. */
    target: string;
    /** Lowercase names; a field sent on several lines is one value, joined by commas. */
    headers: Record<string, string>;
  };
  status: number;
  /** Lowercase names, as `request.headers`. */
  headers: Record<string, string>;
  /** The body as it came, in its content coding: only what arrived, when `complete` is false. */
  body: Buffer;
  complete: boolean;
}

export interface Judgement {
  /** What the answer was judged by: `getBike 304`, or `no operation (GET /healthz) 200`. */
  answeredBy: string;
  violations: string[];
}

/**
 * Headers of HTTP itself, which OpenAPI does not describe per answer, and why each is left out;
 * the only such list. Any other header an answer carries must be declared for its status.
 */
const HTTP_OWN: Record<string, string> = {
  date: 'every origin server sends it (RFC 9110 6.6.1)',
  connection: 'hop-by-hop: says what becomes of the connection, not of the answer (RFC 9110 7.6.1)',
  'keep-alive': 'hop-by-hop, with Connection (RFC 9112 9.3)',
  'transfer-encoding': 'framing of the body on this connection (RFC 9112 6.1)',
  'content-length': 'framing of the body (RFC 9110 8.6)',
  'content-type': "the body's media type, which the answer's `content` declares: checked there",
  'content-encoding':
    'a coding of the body chosen by Accept-Encoding (RFC 9110 8.4), of any answer: OpenAPI describes the ' +
    'decoded body, which is what is checked',
  vary:
    'names the request fields the answer was chosen by, for caches (RFC 9110 12.5.5): the coding, the ' +
    'media type, the CORS origin; where the document gives a status several media types, Vary must name Accept',
};

/**
 * CORS's own headers (Access-Control-*) are the Fetch standard's, which OpenAPI cannot describe
 * per answer: allowed on an answer to a request that carried Origin, and judged by what the
 * document declares (corsViolations). On any other answer they are undeclared.
 */
const CORS_PREFIX = 'access-control-';

/** Response headers a page reads without their being exposed (the Fetch standard's safelist). */
export const CORS_SAFELISTED = new Set([
  'cache-control',
  'content-language',
  'content-length',
  'content-type',
  'expires',
  'last-modified',
  'pragma',
]);

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'];

/** A path of the document, ready to match a request's. */
interface PathTemplate {
  template: string;
  pattern: RegExp;
  parameters: number;
  item: Partial<Record<string, Operation>>;
}

const templates = new WeakMap<OpenApiDocument, PathTemplate[]>();

/** `/bikes/` and `/bikes` alike (docs/reference/http.md#trailing-slash). */
const withoutTrailingSlash = (path: string) => (path.length > 1 ? path.replace(/\/$/, '') : path);

/** The document's paths, literal ones first (OpenAPI 3.1, "Paths Object"). */
function templatesOf(document: OpenApiDocument): PathTemplate[] {
  let list = templates.get(document);
  if (list) return list;
  list = Object.entries(document.paths)
    .map(([template, item]) => {
      const segments = withoutTrailingSlash(template).split('/');
      const pattern = segments
        .map((segment) => (/^\{[^}]+\}$/.test(segment) ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('/');
      const parameters = segments.filter((segment) => segment.startsWith('{')).length;
      return { template, pattern: new RegExp(`^${pattern}$`), parameters, item: item ?? {} };
    })
    .sort((a, b) => a.parameters - b.parameters);
  templates.set(document, list);
  return list;
}

/** The path of a request target (origin-form or absolute-form), not decoded; undefined for `*` or no target. */
function pathOf(target: string): string | undefined {
  if (target.startsWith('/')) return target.split('?')[0];
  if (!/^https?:\/\//i.test(target)) return undefined;
  try {
    return new URL(target).pathname;
  } catch {
    return undefined;
  }
}

interface Route {
  /** The operation that serves the request, and its name. */
  operation?: { name: string; operation: Operation };
  /** The document's path that matches the request's, served or not. */
  template?: string;
}

function routeOf(document: OpenApiDocument, method: string, path: string | undefined): Route {
  if (path === undefined || method === '') return {};
  const matching = templatesOf(document).filter(({ pattern }) => pattern.test(withoutTrailingSlash(path)));
  if (matching.length === 0) return {};
  // The path: the most literal that matches (`/bikes` and `/bikes/` are one path, its two spellings).
  const candidates = matching.filter(({ parameters }) => parameters === matching[0].parameters);
  // Methods are case-sensitive (RFC 9110 9.1): `get` is no GET, and no operation's.
  for (const { template, item } of METHODS.includes(method) ? candidates : []) {
    const own = item[method.toLowerCase()];
    const operation = own ?? (method === 'HEAD' ? item.get : undefined);
    if (!operation) continue;
    const name = operation.operationId ?? `${method} ${template}`;
    return { operation: { name: own ? name : `${name} (HEAD)`, operation }, template };
  }
  return { template: matching[0].template };
}

/** A path the document does not have, its opaque segments (ids, random names) as `*`, so that alike ones read alike. */
const pathShape = (path: string) =>
  path
    .split('/')
    .map((segment) => (segment === '' || /^[A-Za-z][\w.-]{0,30}$/.test(segment) ? segment : '*'))
    .join('/');

/** The methods the document serves at `path`: what a 405's Allow must name. */
function methodsAt(document: OpenApiDocument, path: string): string[] {
  return METHODS.filter((method) => routeOf(document, method, path).operation);
}

/** Follows `$ref`s within the document. */
function resolved<T>(document: OpenApiDocument, value: T): T {
  let node: unknown = value;
  for (let hops = 0; hops < 16; hops++) {
    const ref = (node as { $ref?: unknown } | undefined)?.$ref;
    if (typeof ref !== 'string' || !ref.startsWith('#/')) return node as T;
    node = ref
      .slice(2)
      .split('/')
      .reduce<unknown>((at, key) => (at as Json | undefined)?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], document);
  }
  throw new Error(`a $ref loop at ${JSON.stringify(value)}`);
}

function responseFor(responses: Record<string, ResponseObject> | undefined, status: number) {
  if (!responses) return undefined;
  return responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
}

/** The header's value as its schema reads it: a number where it declares one (Retry-After). */
function headerValue(schema: Json | undefined, value: string): unknown {
  const numeric = schema?.type === 'integer' || schema?.type === 'number';
  return numeric && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
}

function headerViolations(
  document: OpenApiDocument,
  response: ResponseObject,
  exchange: Exchange,
  corsAllowed: boolean,
): string[] {
  const violations: string[] = [];
  const declared = new Map(
    Object.entries(response.headers ?? {}).map(([name, header]) => [name.toLowerCase(), { name, header }]),
  );
  for (const [lower, { name, header: raw }] of declared) {
    const header = resolved(document, raw);
    const value = exchange.headers[lower];
    if (value === undefined) {
      if (header.required) violations.push(`${name} is required and absent`);
      continue;
    }
    if (!header.schema) continue;
    const errors = schemaErrors(document, resolved(document, header.schema), headerValue(header.schema, value));
    if (errors.length > 0) violations.push(`${name}: ${JSON.stringify(value)} ${errors.join('; ')}`);
  }
  for (const name of Object.keys(exchange.headers)) {
    if (declared.has(name) || Object.hasOwn(HTTP_OWN, name)) continue;
    if (name.startsWith(CORS_PREFIX) && corsAllowed) continue;
    violations.push(`${name} is not declared for this status`);
  }
  return violations;
}

/** The content codings of an answer, undone; undefined for one this checker cannot undo. */
function decoded(body: Buffer, contentEncoding: string | undefined, complete: boolean): Buffer | undefined {
  // A body cut short decodes as far as it came.
  const flush = complete ? {} : { finishFlush: zlib.constants.Z_SYNC_FLUSH };
  const codings = (contentEncoding ?? '')
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  let bytes = body;
  for (const coding of codings.reverse()) {
    if (coding === 'gzip' || coding === 'x-gzip') bytes = zlib.gunzipSync(bytes, flush);
    else if (coding === 'deflate') bytes = zlib.inflateSync(bytes, flush);
    else if (coding === 'br') {
      bytes = zlib.brotliDecompressSync(bytes, complete ? {} : { finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH });
    } else return undefined;
  }
  return bytes;
}

const isJson = (mediaType: string) => mediaType === 'application/json' || mediaType.endsWith('+json');

/** `text/*` matches `text/plain`; parameters (charset) do not count. */
function declaredMediaType(content: Record<string, MediaTypeObject>, mediaType: string): string | undefined {
  return Object.keys(content).find((key) => {
    const [type, subtype] = key.split(';')[0].trim().toLowerCase().split('/');
    return (
      (type === '*' || type === mediaType.split('/')[0]) && (subtype === '*' || `${type}/${subtype}` === mediaType)
    );
  });
}

/** The schema of each event of a stream: an item of the JSON list the same answer gives as a page. */
function eventSchema(document: OpenApiDocument, content: Record<string, MediaTypeObject>): Json | undefined {
  const list = content['application/json']?.schema;
  const schema = list && resolved(document, list);
  return schema?.type === 'array' ? (schema.items as Json | undefined) : undefined;
}

function bodyViolations(document: OpenApiDocument, response: ResponseObject, exchange: Exchange): string[] {
  const content = response.content ?? {};
  const contentType = exchange.headers['content-type'];
  // No body is no representation (HEAD, 304, the parser's bare refusals): nothing to judge.
  if (exchange.body.length === 0) return [];
  if (contentType === undefined) return ['a body without Content-Type'];
  const mediaType = contentType.split(';')[0].trim().toLowerCase();
  const declared = declaredMediaType(content, mediaType);
  if (declared === undefined) {
    const types = Object.keys(content);
    return [`a ${mediaType} body, where the document declares ${types.length > 0 ? types.join(', ') : 'none'}`];
  }
  const violations: string[] = [];
  if (Object.keys(content).length > 1 && !/(^|,)\s*accept\s*(,|$)/i.test(exchange.headers.vary ?? '')) {
    violations.push(`no Vary: Accept, where the document gives this status ${Object.keys(content).join(' or ')}`);
  }
  let bytes: Buffer | undefined;
  try {
    bytes = decoded(exchange.body, exchange.headers['content-encoding'], exchange.complete);
  } catch (err) {
    return [
      ...violations,
      `the body does not decode as ${exchange.headers['content-encoding']}: ${(err as Error).message}`,
    ];
  }
  if (bytes === undefined)
    return [...violations, `a body in ${exchange.headers['content-encoding']}, which is no coding of HTTP's`];
  const text = bytes.toString('utf8');
  const schema = content[declared].schema;
  if (mediaType === 'text/event-stream') {
    if (!/text\/event-stream|text\/\*|\*\/\*/i.test(exchange.request.headers.accept ?? '')) {
      violations.push('an event stream to a request whose Accept did not ask for one');
    }
    const item = eventSchema(document, content);
    if (!item) return [...violations, 'no schema for the events: the answer gives no JSON list of them as a page'];
    const reader = eventStreamReader();
    reader.read(text);
    for (const event of reader.events) {
      let data: unknown;
      try {
        data = JSON.parse(event.data);
      } catch {
        violations.push(`an event whose data is not JSON: ${JSON.stringify(event.data.slice(0, 80))}`);
        continue;
      }
      violations.push(...schemaErrors(document, item, data).map((error) => `an event's data: ${error}`));
    }
    return violations;
  }
  if (!exchange.complete || !schema) return violations;
  if (isJson(mediaType)) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return [...violations, `a ${mediaType} body that is not JSON: ${JSON.stringify(text.slice(0, 80))}`];
    }
    return [...violations, ...schemaErrors(document, resolved(document, schema), value)];
  }
  if (mediaType.startsWith('text/'))
    return [...violations, ...schemaErrors(document, resolved(document, schema), text)];
  return violations;
}

/** A list header's elements, lowercased (`*` kept). */
const elements = (value: string | undefined) =>
  (value ?? '')
    .split(',')
    .map((element) => element.trim().toLowerCase())
    .filter(Boolean);

/**
 * The request headers an operation may be sent with, which a preflight must allow: its header
 * parameters, Authorization where it is secured, Content-Type where it takes a body, and
 * Content-Encoding where the document says a body may come in a coding (it declares
 * Accept-Encoding, the codings taken, on an answer: RFC 9110 12.5.3).
 */
function requestHeadersOf(document: OpenApiDocument, operation: Operation): string[] {
  const names = (operation.parameters ?? [])
    .map((parameter) => resolved(document, parameter))
    .filter((parameter) => parameter.in === 'header')
    .map((parameter) => String(parameter.name).toLowerCase());
  if ((operation.security ?? []).some((requirement) => Object.keys(requirement).length > 0))
    names.push('authorization');
  if (operation.requestBody) {
    names.push('content-type');
    const codings = Object.values(operation.responses).some((response) =>
      Object.keys(resolved(document, response).headers ?? {}).some((name) => name.toLowerCase() === 'accept-encoding'),
    );
    if (codings) names.push('content-encoding');
  }
  return names;
}

/**
 * What CORS says of an answer to a request with Origin must agree with the document: a
 * preflight allows every header the operation asked for may be sent with, and an answer exposes
 * to the page every header the document declares for it (those a page reads anyway aside).
 */
function corsViolations(document: OpenApiDocument, exchange: Exchange, response?: ResponseObject): string[] {
  const { headers, request } = exchange;
  if (request.headers.origin === undefined || headers['access-control-allow-origin'] === undefined) return [];
  const requestedMethod = request.headers['access-control-request-method'];
  if (request.method === 'OPTIONS' && requestedMethod !== undefined) {
    const { operation } = routeOf(document, requestedMethod.toUpperCase(), pathOf(request.target));
    if (!operation) return [];
    const allowed = elements(headers['access-control-allow-headers']);
    const missing = requestHeadersOf(document, operation.operation).filter((name) => !allowed.includes(name));
    const methods = elements(headers['access-control-allow-methods']);
    return [
      ...(missing.length > 0 ? [`a preflight for ${operation.name} does not allow ${missing.join(', ')}`] : []),
      ...(methods.includes(requestedMethod.toLowerCase())
        ? []
        : [`a preflight for ${operation.name} does not allow the method ${requestedMethod}`]),
    ];
  }
  const exposed = elements(headers['access-control-expose-headers']);
  if (exposed.includes('*')) return [];
  const hidden = Object.keys(response?.headers ?? {})
    .map((name) => name.toLowerCase())
    .filter((name) => headers[name] !== undefined && !CORS_SAFELISTED.has(name) && !exposed.includes(name));
  return hidden.length > 0 ? [`${hidden.join(', ')} declared for this answer but not exposed to a page`] : [];
}

/** Allow (of a 405, or OPTIONS's 204) names exactly the methods the document serves at the path. */
function allowViolations(document: OpenApiDocument, exchange: Exchange): string[] {
  const allow = exchange.headers.allow;
  const path = pathOf(exchange.request.target);
  if (path === undefined) return [];
  if (allow === undefined) return exchange.status === 405 ? ['a 405 without Allow (RFC 9110 15.5.6)'] : [];
  const sent = elements(allow)
    .map((method) => method.toUpperCase())
    .sort();
  const served = methodsAt(document, path).sort();
  return sent.join() === served.join()
    ? []
    : [`Allow: ${sent.join(', ')}, where the document serves ${served.join(', ') || 'nothing'} at this path`];
}

/** A request no operation serves, as its answer's cause: a refusal's by where it went, any other by what was asked. */
function unmatchedRequest(method: string, path: string | undefined, template: string | undefined, status: number) {
  if (method === '' || path === undefined) return 'no request line of a path';
  if (status >= 400 && status < 500)
    return template ? `a method ${template} does not serve` : 'a path it does not have';
  return `${method} ${template ?? pathShape(path)}`;
}

/** What the document says of the exchange's answer that the answer does not keep. */
export function judge(document: OpenApiDocument, exchange: Exchange): Judgement {
  const { request, status } = exchange;
  const path = pathOf(request.target);
  const route = routeOf(document, request.method, path);
  const unmatched = document['x-unmatched-requests']?.responses;
  const answeredBy = route.operation
    ? `${route.operation.name} ${status}`
    : `no operation (${unmatchedRequest(request.method, path, route.template, status)}) ${status}`;
  const raw = responseFor(route.operation ? route.operation.operation.responses : unmatched, status);
  const response = raw && resolved(document, raw);
  const undeclared = route.operation
    ? 'not a status of this operation'
    : `x-unmatched-requests, for requests no operation serves, declares no ${status}`;
  // What CORS and Allow say is judged by the document's operations, whether the status is declared or not.
  const violations = [
    ...(response ? headerViolations(document, response, exchange, request.headers.origin !== undefined) : [undeclared]),
    ...(route.operation ? [] : allowViolations(document, exchange)),
    ...corsViolations(document, exchange, response),
    ...(response ? bodyViolations(document, response, exchange) : []),
  ];
  return { answeredBy, violations };
}
