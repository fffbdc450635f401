import fs from 'node:fs';
import { STATUS_CODES } from 'node:http';
import path from 'node:path';
import { hasValidators } from './endpoint';
import { DOCS_ROUTES } from './docs-router';
import { HEADERS, type HeaderName } from './headers';
import { HEALTH_ROUTES } from './health-router';
import { fromDescription, type JsonSchema } from './json-schema';
import { LISTENER_ANSWERS, LISTENER_BODIES } from './listener';
import { UNMATCHED_ANSWERS } from './method-not-allowed';
import type { PlainRoute } from './plain-route';
import { alwaysSent, headersOf } from './route';
import type { ErrorStatus, RouteDeclaration } from './route-declaration';
import { describe } from './schema';

/**
 * The OpenAPI 3.1 description of an API, made from its routes' declarations: the request schemas
 * are converted from the yup schemas the routes validate with, each operation's error statuses
 * follow from what its route declares (errorStatusesOf, endpoint.ts), and its headers from
 * headersOf (route.ts). What the routes cannot say (the API's name, what a status means on it,
 * the schemas its answers refer to) the API gives (src/api/document.ts).
 */

/** What the API says of itself, beside its routes. */
export interface ApiDescription {
  routes: Record<string, RouteDeclaration<unknown>>;
  /** The document's info, but its version: the package's. */
  info: { title: string; description: string; license: { name: string; identifier: string } };
  tags: { name: string; description: string }[];
  /** The tag of an operation. */
  tagOf(route: RouteDeclaration<unknown>): string;
  /** What each error status means, where a route says nothing of its own (`meanings`). */
  errors: Record<ErrorStatus, string>;
  /** The path parameters, by name: an OpenAPI parameter each, or a $ref to one of `components`. */
  pathParameters: Record<string, unknown>;
  /** Said of every request body's schema on the routes that reach the database. */
  bodyNote: string;
  /**
   * The document's components. Its schemas are `schemas` (those the request bodies may refer to),
   * then the request bodies' own, made from the routes, then `answerSchemas` (only answers use them).
   */
  components: {
    securitySchemes: Record<string, unknown>;
    parameters: Record<string, unknown>;
    schemas: Record<string, JsonSchema>;
    answerSchemas: Record<string, JsonSchema>;
  };
}

const ref = (kind: 'schemas' | 'parameters', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});
const json = (schema: JsonSchema, example?: unknown): Record<string, unknown> => ({
  'application/json': { schema, ...(example !== undefined && { example }) },
});
/** A header as the document describes it, from its one declaration (headers.ts). */
function headerObject(name: HeaderName, required = false): Record<string, unknown> {
  const { description, schema } = HEADERS[name];
  const example = 'example' in HEADERS[name] ? HEADERS[name].example : undefined;
  return { description, ...(required && { required }), schema, ...(example !== undefined && { example }) };
}

/** Whether every answer of a status carries a header. */
type Required = (status: number, name: HeaderName) => boolean;

const headerObjects = (names: HeaderName[], status: number, required: Required = alwaysSent) =>
  Object.fromEntries(names.map((name) => [name, headerObject(name, required(status, name))]));

const plainText = (status: number) => ({ 'text/plain': { schema: { type: 'string' }, example: STATUS_CODES[status] } });

/**
 * What the listener answers (listener.ts) to a request of any path, beside `responses`: a status
 * both answer keeps the one of `responses`, its meaning the listener's too.
 */
function withListenerAnswers(responses: Record<string, { description: string }>) {
  const all: Record<string, { description: string }> = { ...responses };
  for (const [status, meaning] of Object.entries(LISTENER_ANSWERS)) {
    const own = all[status];
    if (own) all[status] = { ...own, description: `${own.description} ${meaning}` };
    else if (LISTENER_BODIES.includes(Number(status))) {
      all[status] = { description: meaning, content: plainText(Number(status)) } as { description: string };
    } else all[status] = { description: meaning };
  }
  return all;
}

/** The error responses of an operation, each with the headers it carries (headersOf, route.ts). */
function errorResponses(route: RouteDeclaration<unknown>, errors: ApiDescription['errors']) {
  const { errors: statuses, required } = headersOf(route);
  const responses: Record<string, { description: string }> = {};
  for (const [status, headers] of statuses) {
    responses[status] = {
      description: route.meanings?.[status] ?? errors[status],
      headers: headerObjects(headers, status, required),
      content: plainText(status),
    } as { description: string };
  }
  return withListenerAnswers(responses);
}

/**
 * A 304 carries what its 200 would have of the validators (RFC 9110 15.4.5: ETag, Cache-Control,
 * Vary), and nothing else of the representation's.
 */
const NOT_MODIFIED = {
  description: 'Not Modified: the If-None-Match ETag is still current; no body.',
  headers: headerObjects(['X-Request-Id', 'ETag', 'Cache-Control'], 304),
};

/** Request headers that are not parameters: the security scheme's, and the body's type and coding. */
const NOT_PARAMETERS = new Set<HeaderName>(['Authorization', 'Content-Type', 'Content-Encoding']);

/** The schema of a plain route's body, by its media type: text otherwise. */
const PLAIN_SCHEMAS: Record<string, JsonSchema> = {
  'application/json': { type: 'object' },
  'image/png': { type: 'string', contentMediaType: 'image/png' },
};

/** The document's operation of a plain route. */
function plainOperation(route: PlainRoute) {
  const parameters = [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  const responses: Record<string, { description: string }> = {};
  for (const [status, { description, types, headers = [] }] of Object.entries(route.responses)) {
    responses[status] = {
      description,
      headers: headerObjects(['X-Request-Id', ...headers], Number(status)),
      content: Object.fromEntries(types.map((type) => [type, { schema: PLAIN_SCHEMAS[type] ?? { type: 'string' } }])),
    } as { description: string };
  }
  return {
    tags: ['operations'],
    operationId: route.operationId,
    security: [],
    summary: route.summary,
    ...(parameters.length > 0 && { parameters }),
    responses: withListenerAnswers(responses),
  };
}

/**
 * What answers a request no operation serves (a path the document does not have, a method its
 * path does not serve, OPTIONS): the answers of UNMATCHED_ANSWERS (method-not-allowed.ts) and the
 * listener's. An extension of the document (`x-`), which code generators pass over.
 */
function unmatchedRequests() {
  const responses: Record<string, { description: string }> = {};
  for (const [status, { description, headers, sometimes = [] }] of Object.entries(UNMATCHED_ANSWERS)) {
    const required: Required = (code, name) => alwaysSent(code, name) && !sometimes.includes(name);
    responses[status] = {
      description,
      headers: headerObjects(['X-Request-Id', ...headers], Number(status), required),
      ...(status !== '204' && { content: plainText(Number(status)) }),
    } as { description: string };
  }
  return {
    description: 'The answers to a request that no operation of this document serves.',
    responses: withListenerAnswers(responses),
  };
}

/** The OpenAPI path of a route's: /bikes/{id} for /bikes/:id. */
const openApiPath = (routePath: string) => routePath.replace(/:(\w+)/g, '{$1}');

/** The OpenAPI document of `api`. */
export function openApiDocument(api: ApiDescription) {
  const { version } = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  const schemas: Record<string, JsonSchema> = { ...api.components.schemas };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [operationId, route] of Object.entries(api.routes)) {
    const urlPath = openApiPath(route.path);
    const inputs = describe(route.input).fields ?? {};
    const queryFields = inputs.query?.fields ?? {};
    const queryParameters = Object.entries(route.queryParameters ?? {}).map(([name, { description, example }]) => ({
      name,
      in: 'query',
      required: !queryFields[name].optional,
      description,
      schema: fromDescription(queryFields[name]),
      // A list: the parameter repeated, a value each (`vendor=A&vendor=B`).
      ...(queryFields[name].type === 'array' && { style: 'form', explode: true }),
      example,
    }));
    const headerFields = inputs.headers?.fields ?? {};
    const headers = headersOf(route);
    const headerParameters = headers.request
      .filter((name) => !NOT_PARAMETERS.has(name))
      .map((name) => {
        const checked = headerFields[name.toLowerCase()];
        const { description, schema, ...rest } = headerObject(name);
        return {
          name,
          in: 'header',
          required: checked ? !checked.optional : false,
          description,
          schema: checked ? fromDescription(checked) : schema,
          ...rest,
        };
      });
    const pathParameters = [...route.path.matchAll(/:(\w+)/g)].map(([, name]) => api.pathParameters[name]);
    const parameters = [...pathParameters, ...queryParameters, ...headerParameters];
    const body = route.requestBody;
    if (body && inputs.body) {
      const note = route.database === false ? '' : ` ${api.bodyNote}`;
      schemas[body.name] = { description: `${body.description}${note}`, ...fromDescription(inputs.body, schemas) };
    }
    paths[urlPath] ??= {};
    paths[urlPath][route.method] = {
      tags: [api.tagOf(route)],
      operationId,
      security: route.scope ? [{ bearerAuth: [route.scope] }] : [],
      summary: route.summary,
      ...(route.description && { description: route.description }),
      ...(parameters.length > 0 && { parameters }),
      ...(body && {
        requestBody: {
          required: body.required ?? true,
          description: body.description,
          content: Object.fromEntries(
            (body.mediaTypes ?? ['application/json']).map((type, i) => [
              type,
              { schema: ref('schemas', body.name), ...(i === 0 && { example: body.example }) },
            ]),
          ),
        },
      }),
      responses: {
        200: {
          description: route.ok.description,
          headers: headerObjects(headers.ok, 200, headers.required),
          content: {
            ...json(route.ok.schema, route.ok.example),
            ...(route.eventStream && {
              'text/event-stream': {
                schema: { type: 'string', description: route.eventStream.description },
                example: route.eventStream.example,
              },
            }),
          },
        },
        ...(hasValidators(route) && { 304: NOT_MODIFIED }),
        ...errorResponses(route, api.errors),
      },
    };
  }

  return {
    openapi: '3.1.0',
    info: { title: api.info.title, version, license: api.info.license, description: api.info.description },
    // Relative: the server that serves this document.
    servers: [{ url: '/', description: 'This service' }],
    tags: api.tags,
    paths: {
      ...paths,
      ...Object.fromEntries(
        [...HEALTH_ROUTES, ...DOCS_ROUTES].map((route) => [route.path, { get: plainOperation(route) }]),
      ),
    },
    'x-unmatched-requests': unmatchedRequests(),
    components: {
      securitySchemes: api.components.securitySchemes,
      parameters: api.components.parameters,
      schemas: { ...schemas, ...api.components.answerSchemas },
    },
  };
}
