/*!
 * bike-catalog-client. Includes openapi-fetch (https://openapi-ts.dev), under its license:
 *
 * MIT License
 *
 * Copyright (c) 2023 Drew Powers
 *
 * Permission is hereby granted, free of charge, to any person obtaining a copy
 * of this software and associated documentation files (the "Software"), to deal
 * in the Software without restriction, including without limitation the rights
 * to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 * copies of the Software, and to permit persons to whom the Software is
 * furnished to do so, subject to the following conditions:
 *
 * The above copyright notice and this permission notice shall be included in all
 * copies or substantial portions of the Software.
 *
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 * AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 * LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 * OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
 * SOFTWARE.
 */
const PATH_PARAM_RE = /\{[^{}]+\}/g;
const supportsRequestInitExt = () => {
  return typeof process === "object" && Number.parseInt(process?.versions?.node?.substring(0, 2)) >= 18 && process.versions.undici;
};
function randomID() {
  return Math.random().toString(36).slice(2, 11);
}
function createClient(clientOptions) {
  let {
    baseUrl = "",
    Request: CustomRequest = globalThis.Request,
    fetch: baseFetch = globalThis.fetch,
    querySerializer: globalQuerySerializer,
    bodySerializer: globalBodySerializer,
    pathSerializer: globalPathSerializer,
    headers: baseHeaders,
    requestInitExt = void 0,
    ...baseOptions
  } = { ...clientOptions };
  requestInitExt = supportsRequestInitExt() ? requestInitExt : void 0;
  baseUrl = removeTrailingSlash(baseUrl);
  const globalMiddlewares = [];
  async function coreFetch(schemaPath, fetchOptions) {
    const {
      baseUrl: localBaseUrl,
      fetch = baseFetch,
      Request = CustomRequest,
      headers,
      params = {},
      parseAs = "json",
      querySerializer: requestQuerySerializer,
      bodySerializer = globalBodySerializer ?? defaultBodySerializer,
      pathSerializer: requestPathSerializer,
      body,
      middleware: requestMiddlewares = [],
      ...init
    } = fetchOptions || {};
    let finalBaseUrl = baseUrl;
    if (localBaseUrl) {
      finalBaseUrl = removeTrailingSlash(localBaseUrl) ?? baseUrl;
    }
    let querySerializer = typeof globalQuerySerializer === "function" ? globalQuerySerializer : createQuerySerializer(globalQuerySerializer);
    if (requestQuerySerializer) {
      querySerializer = typeof requestQuerySerializer === "function" ? requestQuerySerializer : createQuerySerializer({
        ...typeof globalQuerySerializer === "object" ? globalQuerySerializer : {},
        ...requestQuerySerializer
      });
    }
    const pathSerializer = requestPathSerializer || globalPathSerializer || defaultPathSerializer;
    const serializedBody = body === void 0 ? void 0 : bodySerializer(
      body,
      // Note: we declare mergeHeaders() both here and below because it’s a bit of a chicken-or-egg situation:
      // bodySerializer() needs all headers so we aren’t dropping ones set by the user, however,
      // the result of this ALSO sets the lowest-priority content-type header. So we re-merge below,
      // setting the content-type at the very beginning to be overwritten.
      // Lastly, based on the way headers work, it’s not a simple “present-or-not” check becauase null intentionally un-sets headers.
      mergeHeaders(baseHeaders, headers, params.header)
    );
    const finalHeaders = mergeHeaders(
      // with no body, we should not to set Content-Type
      serializedBody === void 0 || // if serialized body is FormData; browser will correctly set Content-Type & boundary expression
      serializedBody instanceof FormData ? {} : {
        "Content-Type": "application/json"
      },
      baseHeaders,
      headers,
      params.header
    );
    const finalMiddlewares = [...globalMiddlewares, ...requestMiddlewares];
    const requestInit = {
      redirect: "follow",
      ...baseOptions,
      ...init,
      body: serializedBody,
      headers: finalHeaders
    };
    let id;
    let options;
    let request = new Request(
      createFinalURL(schemaPath, { baseUrl: finalBaseUrl, params, querySerializer, pathSerializer }),
      requestInit
    );
    let response;
    for (const key in init) {
      if (!(key in request)) {
        request[key] = init[key];
      }
    }
    if (finalMiddlewares.length) {
      id = randomID();
      options = Object.freeze({
        baseUrl: finalBaseUrl,
        fetch,
        parseAs,
        querySerializer,
        bodySerializer,
        pathSerializer
      });
      for (const m of finalMiddlewares) {
        if (m && typeof m === "object" && typeof m.onRequest === "function") {
          const result = await m.onRequest({
            request,
            schemaPath,
            params,
            options,
            id
          });
          if (result) {
            if (result instanceof Request) {
              request = result;
            } else if (result instanceof Response) {
              response = result;
              break;
            } else {
              throw new Error("onRequest: must return new Request() or Response() when modifying the request");
            }
          }
        }
      }
    }
    if (!response) {
      try {
        response = await fetch(request, requestInitExt);
      } catch (error2) {
        let errorAfterMiddleware = error2;
        if (finalMiddlewares.length) {
          for (let i = finalMiddlewares.length - 1; i >= 0; i--) {
            const m = finalMiddlewares[i];
            if (m && typeof m === "object" && typeof m.onError === "function") {
              const result = await m.onError({
                request,
                error: errorAfterMiddleware,
                schemaPath,
                params,
                options,
                id
              });
              if (result) {
                if (result instanceof Response) {
                  errorAfterMiddleware = void 0;
                  response = result;
                  break;
                }
                if (result instanceof Error) {
                  errorAfterMiddleware = result;
                  continue;
                }
                throw new Error("onError: must return new Response() or instance of Error");
              }
            }
          }
        }
        if (errorAfterMiddleware) {
          throw errorAfterMiddleware;
        }
      }
      if (finalMiddlewares.length) {
        for (let i = finalMiddlewares.length - 1; i >= 0; i--) {
          const m = finalMiddlewares[i];
          if (m && typeof m === "object" && typeof m.onResponse === "function") {
            const result = await m.onResponse({
              request,
              response,
              schemaPath,
              params,
              options,
              id
            });
            if (result) {
              if (!(result instanceof Response)) {
                throw new Error("onResponse: must return new Response() when modifying the response");
              }
              response = result;
            }
          }
        }
      }
    }
    const contentLength = response.headers.get("Content-Length");
    if (response.status === 204 || request.method === "HEAD" || contentLength === "0" && !response.headers.get("Transfer-Encoding")?.includes("chunked")) {
      return response.ok ? { data: void 0, response } : { error: void 0, response };
    }
    if (response.ok) {
      const getResponseData = async () => {
        if (parseAs === "stream") {
          return response.body;
        }
        if (parseAs === "json" && !contentLength) {
          const raw = await response.text();
          return raw ? JSON.parse(raw) : void 0;
        }
        return await response[parseAs]();
      };
      return { data: await getResponseData(), response };
    }
    let error = await response.text();
    try {
      error = JSON.parse(error);
    } catch {
    }
    return { error, response };
  }
  return {
    request(method, url, init) {
      return coreFetch(url, { ...init, method: method.toUpperCase() });
    },
    /** Call a GET endpoint */
    GET(url, init) {
      return coreFetch(url, { ...init, method: "GET" });
    },
    /** Call a PUT endpoint */
    PUT(url, init) {
      return coreFetch(url, { ...init, method: "PUT" });
    },
    /** Call a POST endpoint */
    POST(url, init) {
      return coreFetch(url, { ...init, method: "POST" });
    },
    /** Call a DELETE endpoint */
    DELETE(url, init) {
      return coreFetch(url, { ...init, method: "DELETE" });
    },
    /** Call a OPTIONS endpoint */
    OPTIONS(url, init) {
      return coreFetch(url, { ...init, method: "OPTIONS" });
    },
    /** Call a HEAD endpoint */
    HEAD(url, init) {
      return coreFetch(url, { ...init, method: "HEAD" });
    },
    /** Call a PATCH endpoint */
    PATCH(url, init) {
      return coreFetch(url, { ...init, method: "PATCH" });
    },
    /** Call a TRACE endpoint */
    TRACE(url, init) {
      return coreFetch(url, { ...init, method: "TRACE" });
    },
    /** Register middleware */
    use(...middleware) {
      for (const m of middleware) {
        if (!m) {
          continue;
        }
        if (typeof m !== "object" || !("onRequest" in m || "onResponse" in m || "onError" in m)) {
          throw new Error("Middleware must be an object with one of `onRequest()`, `onResponse() or `onError()`");
        }
        globalMiddlewares.push(m);
      }
    },
    /** Unregister middleware */
    eject(...middleware) {
      for (const m of middleware) {
        const i = globalMiddlewares.indexOf(m);
        if (i !== -1) {
          globalMiddlewares.splice(i, 1);
        }
      }
    }
  };
}
function serializePrimitiveParam(name, value, options) {
  if (value === void 0 || value === null) {
    return "";
  }
  if (typeof value === "object") {
    throw new Error(
      "Deeply-nested arrays/objects aren\u2019t supported. Provide your own `querySerializer()` to handle these."
    );
  }
  return `${name}=${options?.allowReserved === true ? value : encodeURIComponent(value)}`;
}
function serializeObjectParam(name, value, options) {
  if (!value || typeof value !== "object") {
    return "";
  }
  const values = [];
  const joiner = {
    simple: ",",
    label: ".",
    matrix: ";"
  }[options.style] || "&";
  if (options.style !== "deepObject" && options.explode === false) {
    for (const k in value) {
      values.push(k, options.allowReserved === true ? value[k] : encodeURIComponent(value[k]));
    }
    const final2 = values.join(",");
    switch (options.style) {
      case "form": {
        return `${name}=${final2}`;
      }
      case "label": {
        return `.${final2}`;
      }
      case "matrix": {
        return `;${name}=${final2}`;
      }
      default: {
        return final2;
      }
    }
  }
  for (const k in value) {
    const finalName = options.style === "deepObject" ? `${name}[${k}]` : k;
    values.push(serializePrimitiveParam(finalName, value[k], options));
  }
  const final = values.join(joiner);
  return options.style === "label" || options.style === "matrix" ? `${joiner}${final}` : final;
}
function serializeArrayParam(name, value, options) {
  if (!Array.isArray(value)) {
    return "";
  }
  if (options.explode === false) {
    const joiner2 = { form: ",", spaceDelimited: "%20", pipeDelimited: "|" }[options.style] || ",";
    const final = (options.allowReserved === true ? value : value.map((v) => encodeURIComponent(v))).join(joiner2);
    switch (options.style) {
      case "simple": {
        return final;
      }
      case "label": {
        return `.${final}`;
      }
      case "matrix": {
        return `;${name}=${final}`;
      }
      // case "spaceDelimited":
      // case "pipeDelimited":
      default: {
        return `${name}=${final}`;
      }
    }
  }
  const joiner = { simple: ",", label: ".", matrix: ";" }[options.style] || "&";
  const values = [];
  for (const v of value) {
    if (options.style === "simple" || options.style === "label") {
      values.push(options.allowReserved === true ? v : encodeURIComponent(v));
    } else {
      values.push(serializePrimitiveParam(name, v, options));
    }
  }
  return options.style === "label" || options.style === "matrix" ? `${joiner}${values.join(joiner)}` : values.join(joiner);
}
function createQuerySerializer(options) {
  return function querySerializer(queryParams) {
    const search = [];
    if (queryParams && typeof queryParams === "object") {
      for (const name in queryParams) {
        const value = queryParams[name];
        if (value === void 0 || value === null) {
          continue;
        }
        if (Array.isArray(value)) {
          if (value.length === 0) {
            continue;
          }
          search.push(
            serializeArrayParam(name, value, {
              style: "form",
              explode: true,
              ...options?.array,
              allowReserved: options?.allowReserved || false
            })
          );
          continue;
        }
        if (typeof value === "object") {
          search.push(
            serializeObjectParam(name, value, {
              style: "deepObject",
              explode: true,
              ...options?.object,
              allowReserved: options?.allowReserved || false
            })
          );
          continue;
        }
        search.push(serializePrimitiveParam(name, value, options));
      }
    }
    return search.join("&");
  };
}
function defaultPathSerializer(pathname, pathParams) {
  let nextURL = pathname;
  for (const match of pathname.match(PATH_PARAM_RE) ?? []) {
    let name = match.substring(1, match.length - 1);
    let explode = false;
    let style = "simple";
    if (name.endsWith("*")) {
      explode = true;
      name = name.substring(0, name.length - 1);
    }
    if (name.startsWith(".")) {
      style = "label";
      name = name.substring(1);
    } else if (name.startsWith(";")) {
      style = "matrix";
      name = name.substring(1);
    }
    if (!pathParams || pathParams[name] === void 0 || pathParams[name] === null) {
      continue;
    }
    const value = pathParams[name];
    if (Array.isArray(value)) {
      nextURL = nextURL.replace(match, serializeArrayParam(name, value, { style, explode }));
      continue;
    }
    if (typeof value === "object") {
      nextURL = nextURL.replace(match, serializeObjectParam(name, value, { style, explode }));
      continue;
    }
    if (style === "matrix") {
      nextURL = nextURL.replace(match, `;${serializePrimitiveParam(name, value)}`);
      continue;
    }
    nextURL = nextURL.replace(match, style === "label" ? `.${encodeURIComponent(value)}` : encodeURIComponent(value));
  }
  return nextURL;
}
function defaultBodySerializer(body, headers) {
  if (body instanceof FormData) {
    return body;
  }
  if (headers) {
    const contentType = headers.get instanceof Function ? headers.get("Content-Type") ?? headers.get("content-type") : headers["Content-Type"] ?? headers["content-type"];
    if (contentType === "application/x-www-form-urlencoded") {
      return new URLSearchParams(body).toString();
    }
  }
  return JSON.stringify(body);
}
function createFinalURL(pathname, options) {
  let finalURL = `${options.baseUrl}${pathname}`;
  if (options.params?.path) {
    finalURL = options.pathSerializer(finalURL, options.params.path);
  }
  let search = options.querySerializer(options.params.query ?? {});
  if (search.startsWith("?")) {
    search = search.substring(1);
  }
  if (search) {
    finalURL += `?${search}`;
  }
  return finalURL;
}
function mergeHeaders(...allHeaders) {
  const finalHeaders = new Headers();
  for (const h of allHeaders) {
    if (!h || typeof h !== "object") {
      continue;
    }
    const iterator = h instanceof Headers ? h.entries() : Object.entries(h);
    for (const [k, v] of iterator) {
      if (v === null) {
        finalHeaders.delete(k);
      } else if (Array.isArray(v)) {
        for (const v2 of v) {
          finalHeaders.append(k, v2);
        }
      } else if (v !== void 0) {
        finalHeaders.set(k, v);
      }
    }
  }
  return finalHeaders;
}
function removeTrailingSlash(url) {
  if (url.endsWith("/")) {
    return url.substring(0, url.length - 1);
  }
  return url;
}

/**
 * The state of each bike as this client last read or wrote it: its ETag (for If-Match), and its
 * JSON, to tell whether a bike a caller hands back is that state. The most recent 10,000.
 */
class BikeStates {
    states = new Map();
    remember(bike, response) {
        const etag = response.headers.get('ETag');
        this.states.delete(bike.id);
        if (etag === null)
            return;
        this.states.set(bike.id, { etag, json: canonicalJson(bike) });
        if (this.states.size > 10_000)
            this.states.delete(this.states.keys().next().value);
    }
    forget(id) {
        this.states.delete(id);
    }
    /** The ETag of the bike `id` as last read or written; of `bike` only if that is the state last read. */
    etagOf(id, bike) {
        const state = this.states.get(id);
        return state && (bike === undefined || state.json === canonicalJson(bike)) ? state.etag : undefined;
    }
}
/** JSON with every object's keys sorted: equal for equal values, whatever order their keys were set in. */
function canonicalJson(value) {
    return JSON.stringify(value, (_key, item) => item !== null && typeof item === 'object' && !Array.isArray(item)
        ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : item);
}

/** Every error the client throws for an answer of the service, or for the lack of one. */
class CatalogError extends Error {
    status;
    name = 'CatalogError';
    constructor(message, 
    /** The answer's status; undefined when no answer came (the connection failed). */
    status, options) {
        super(message, options);
        this.status = status;
    }
}
/** A 4xx: the request was refused, and nothing was written. */
class RequestError extends CatalogError {
    invalidField;
    name = 'RequestError';
    constructor(message, status, 
    /** The field the service refused (`X-Invalid-Field`: `priceRange.minPrice.amount`), when it named one. */
    invalidField) {
        super(message, status);
        this.invalidField = invalidField;
    }
}
/** A 404: no such bike. */
class NotFoundError extends RequestError {
    name = 'NotFoundError';
}
/**
 * A write refused because the bike changed since it was read (412), or found changed before it
 * was sent: nothing was written. `current` is the bike as it is now; the client remembers its
 * state, so `update(current.id, changes)` again applies the changes to it.
 */
class ConflictError extends CatalogError {
    current;
    name = 'ConflictError';
    constructor(current) {
        super(`bike ${current.id} changed since it was read: nothing was written`, 412);
        this.current = current;
    }
}
/**
 * The service did not settle a request within the client's attempts: it answered 5xx (or 429,
 * 409), or did not answer. `written` says what became of a write: `nothing` (every answer said
 * so, 503), or `unknown` (an answer said `Write-Outcome: unknown`, or a connection was lost
 * after the request went). A create's `idempotencyKey` learns its outcome later: `create(bike,
 * { idempotencyKey })` within 24 hours answers the bike it made, or makes it.
 */
class ServerError extends CatalogError {
    written;
    idempotencyKey;
    name = 'ServerError';
    constructor(message, status, written, idempotencyKey, options) {
        super(message, status, options);
        this.written = written;
        this.idempotencyKey = idempotencyKey;
    }
}
/**
 * A request stopped on this side, which asking again cannot change: the client refused to send it
 * (a token that an `Authorization` header cannot carry), or the browser withheld the service's
 * answer from this page (CORS: the service does not allow the page's origin). Nothing was written.
 */
class BlockedError extends CatalogError {
    name = 'BlockedError';
    written = 'nothing';
}
/** The error an answer that settles a request as refused stands for: a 404, or another 4xx. */
function refusal(what, response) {
    const message = `${what}: ${response.status} ${response.statusText}`;
    const field = response.headers.get('X-Invalid-Field') ?? undefined;
    if (response.status === 404)
        return new NotFoundError(message, 404);
    const refused = authRefusal(message, response);
    if (refused)
        return refused;
    return new RequestError(field === undefined ? message : `${message} (${field})`, response.status, field);
}
/** What the service's WWW-Authenticate says (RFC 6750): its parameters by name. */
function challengeOf(response) {
    const header = response.headers.get('WWW-Authenticate') ?? '';
    return Object.fromEntries([...header.matchAll(/(\w+)="([^"]*)"/g)].map(([, name, value]) => [name, value]));
}
/** A 401: the write carried no token (docs/reference/callers.md#refusals). */
class TokenMissingError extends RequestError {
    name = 'TokenMissingError';
}
/**
 * A 403 `invalid_token`: the token (or the API key traded for it) was refused: expired, revoked, not
 * signed by a key the service trusts, or malformed. `description` says which, as the service put it.
 */
class InvalidTokenError extends RequestError {
    description;
    name = 'InvalidTokenError';
    constructor(message, description) {
        super(message, 403);
        this.description = description;
    }
}
/** A 403 `insufficient_scope`: the token may not do this; `scope` is the one it needs (`bikes:delete`). */
class InsufficientScopeError extends RequestError {
    scope;
    name = 'InsufficientScopeError';
    constructor(message, scope) {
        super(message, 403);
        this.scope = scope;
    }
}
/** A 403 of POST /api/user without a key: the operator closed token issuance; give the client a `token` or an `apiKey`. */
class IssuanceClosedError extends RequestError {
    name = 'IssuanceClosedError';
}
/** The refusal a 401 or 403 stands for, read from its challenge; undefined for other statuses. */
function authRefusal(message, response) {
    if (response.status === 401)
        return new TokenMissingError(message, 401);
    if (response.status !== 403)
        return undefined;
    const { error, error_description: description = '', scope = '' } = challengeOf(response);
    if (error === 'invalid_token')
        return new InvalidTokenError(`${message} (${description})`, description);
    if (error === 'insufficient_scope')
        return new InsufficientScopeError(`${message} (needs ${scope})`, scope);
    return new IssuanceClosedError(message, 403);
}

/**
 * Lost connections in a row after which a read gives up: a read is cheap to ask again, and a
 * service that does not answer three times in a second or so is down, or not reachable from here,
 * which the caller should hear now rather than after half a minute.
 */
const LOST_READS = 3;
/**
 * Sends a request until an answer settles it, and returns that answer: a success, or a refusal
 * (a 4xx other than those below). On the way it waits out an answer that says nothing was
 * written and when to come back (503, 429, 409: `Retry-After`); renews a refused token once (401,
 * 403); and sends again after an answer or a lost connection that leaves the outcome unknown
 * (504, another 5xx, a network error, the timeout). Only a request that is safe to repeat comes
 * here: a read, a create with its Idempotency-Key, a conditional write. `unknown` says that an
 * earlier attempt may have been applied. `check` runs after an unknown outcome, with its answer if
 * one came: an answer it returns settles the request (a create finds the bike it made).
 */
async function persist(send, options, check) {
    const { what, attempts, timeoutMs, signal, tokens, idempotencyKey, writes = false } = options;
    let unknown = false;
    let renewed = false;
    let lost = 0;
    let tried = 0;
    let last = { said: 'nothing tried' };
    const bounded = () => {
        const timeout = AbortSignal.timeout(timeoutMs);
        return signal ? AbortSignal.any([signal, timeout]) : timeout;
    };
    for (let attempt = 1; attempt <= attempts; attempt++) {
        let answer;
        tried = attempt;
        try {
            answer = await send(bounded());
            lost = 0;
        }
        catch (err) {
            if (signal?.aborted)
                throw signal.reason;
            // Ours, not the connection's: the token could not be had, or sent (tokens.ts).
            if (err instanceof CatalogError)
                throw err;
            last = { said: `no answer (${err instanceof Error ? err.message : String(err)})`, cause: err };
            lost++;
            // Asked once a run of lost connections starts: a browser says no more about what failed.
            if (lost === 1 && (await options.withheld?.(bounded()).catch(() => false))) {
                throw new BlockedError(`${what}: the service answers, but not to this page: its CORS_ORIGIN must name ${pageOrigin()} ` +
                    `(the browser withheld its answer${writes ? ' and sent no write' : ''}); nothing was written`, undefined, { cause: err });
            }
            if (!writes && attempts !== Infinity && lost >= LOST_READS)
                break;
        }
        if (answer) {
            const { status } = answer.response;
            last = { status, said: `${status} ${answer.response.statusText}` };
            if ((status === 401 || status === 403) && tokens && !renewed) {
                tokens.renew();
                renewed = true;
                continue;
            }
            if (status === 409 || status === 429 || status === 503) {
                options.onUnsettled?.(last.said);
                await sleep(retryAfterMs(answer.response) ?? backoffMs(attempt), signal);
                continue;
            }
            if (status < 500)
                return { answer, unknown };
        }
        if (writes)
            unknown = true;
        options.onUnsettled?.(last.said);
        const found = await check?.(answer, bounded()).catch(() => undefined);
        if (found)
            return { answer: found, unknown };
        await sleep(backoffMs(attempt), signal);
    }
    // A read's outcome is never unknown: it wrote nothing, whatever came of it.
    const outcome = writes
        ? `; ${unknown ? 'its outcome is unknown' : 'nothing was written'}`
        : last.status === undefined
            ? '; the service is down, or not reachable from here'
            : '';
    throw new ServerError(`${what}: not settled in ${tried} attempts, the last ${last.said}${outcome}`, last.status, unknown ? 'unknown' : 'nothing', idempotencyKey, { cause: last.cause });
}
/** The page's origin, for a message: where there is none (not a browser), the page's. */
function pageOrigin() {
    return globalThis.location?.origin ?? "the page's origin";
}
/**
 * `Retry-After` in milliseconds (seconds, or an HTTP date), a minute at most: the service's own are
 * a second, or the rest of a limit's minute, and a call should not sleep for an hour on what a
 * proxy on the way said. Undefined when absent or unreadable.
 */
function retryAfterMs(response) {
    const value = response.headers.get('Retry-After')?.trim();
    if (!value)
        return undefined;
    const ms = /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value) - Date.now();
    return Number.isNaN(ms) ? undefined : Math.min(60_000, Math.max(0, ms));
}
/** Exponential, from 250 ms up to 5 s, with jitter, so that clients cut off together do not come back together. */
function backoffMs(attempt) {
    return Math.min(5000, 250 * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
}
/** Waits `ms`, or rejects with the signal's reason once it aborts. */
function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
        if (signal?.aborted)
            return reject(signal.reason);
        const done = () => {
            signal?.removeEventListener('abort', aborted);
            resolve();
        };
        const timer = setTimeout(done, ms);
        const aborted = () => {
            clearTimeout(timer);
            reject(signal?.reason);
        };
        signal?.addEventListener('abort', aborted, { once: true });
    });
}

/** `X-Read-From: primary`: a read right after a write sees it, wherever the service reads a replica. */
const PRIMARY = { 'X-Read-From': 'primary' };
/** GET /bikes/{id}: the bike, whose state the client remembers for a later update. */
async function getBike(ctx, id, { signal, primary = false } = {}) {
    const { answer } = await persist((bounded) => ctx.api.GET('/bikes/{id}', {
        params: { path: { id }, header: primary ? PRIMARY : undefined },
        signal: bounded,
    }), ctx.persistence(`GET /bikes/${id}`, signal));
    if (!answer.data)
        throw refusal(`GET /bikes/${id}`, answer.response);
    ctx.states.remember(answer.data, answer.response);
    return answer.data;
}
/**
 * POST /bikes/ under one Idempotency-Key (a random UUID unless given) kept across its retries
 * (docs/reference/caching-and-conditions.md#idempotency-keys): whatever the answers, the service makes one bike at most.
 * After an answer that leaves the outcome unknown (504, a lost connection), the bike named in
 * `Content-Location` is read: if it is there, it is the answer; otherwise the key is sent again,
 * which answers the bike if the first attempt made it, or makes it.
 */
async function createBike(ctx, bike, { signal, idempotencyKey = uuidV4() } = {}) {
    const { answer } = await persist((bounded) => ctx.api.POST('/bikes/', {
        params: { header: { 'Idempotency-Key': idempotencyKey } },
        body: bike,
        signal: bounded,
    }), { ...ctx.persistence('POST /bikes/', signal), tokens: ctx.tokens, idempotencyKey, writes: true }, async (unsettled, bounded) => {
        const location = unsettled?.response.headers.get('Content-Location');
        const id = location?.slice(location.lastIndexOf('/') + 1);
        if (!id)
            return undefined;
        const found = await ctx.api.GET('/bikes/{id}', { params: { path: { id }, header: PRIMARY }, signal: bounded });
        return found.data ? found : undefined;
    });
    if (!answer.data)
        throw refusal('POST /bikes/', answer.response);
    ctx.states.remember(answer.data, answer.response);
    return answer.data;
}
/**
 * PATCH /bikes/{id} with `If-Match`: the changes apply only to the bike as this client last read
 * or wrote it; or, given the bike itself (from a list, a page, the feed), only to that state of it.
 * A bike the client has not read is read first. A 412 (or a bike given that is no longer as it
 * is) throws ConflictError with the bike as it is now. A retry after an unknown outcome that finds
 * the changes already there returns the bike: the first attempt applied them.
 */
async function updateBike(ctx, target, changes, { signal } = {}) {
    const id = typeof target === 'string' ? target : target.id;
    const what = `PATCH /bikes/${id}`;
    let etag = ctx.states.etagOf(id, typeof target === 'string' ? undefined : target);
    if (etag === undefined) {
        const current = await getBike(ctx, id, { signal, primary: true });
        if (typeof target !== 'string' && canonicalJson(current) !== canonicalJson(target)) {
            throw new ConflictError(current);
        }
        etag = ctx.states.etagOf(id);
    }
    const { answer, unknown } = await persist((bounded) => ctx.api.PATCH('/bikes/{id}', {
        params: { path: { id }, header: etag === undefined ? undefined : { 'If-Match': etag } },
        body: changes,
        signal: bounded,
    }), { ...ctx.persistence(what, signal), tokens: ctx.tokens, writes: true });
    if (answer.data) {
        ctx.states.remember(answer.data, answer.response);
        return answer.data;
    }
    if (answer.response.status !== 412) {
        if (answer.response.status === 404)
            ctx.states.forget(id);
        throw refusal(what, answer.response);
    }
    const current = await getBike(ctx, id, { signal, primary: true }).catch(stillUnknown(what, unknown));
    const applied = Object.entries(changes).every(([field, value]) => canonicalJson(current[field]) === canonicalJson(value));
    if (unknown && applied)
        return current;
    throw new ConflictError(current);
}
/**
 * DELETE /bikes/{id}, with `If-Match` when the client has read the bike: a bike changed since is
 * kept (ConflictError, with the bike as it is now). A 404 after an unknown outcome is the first
 * attempt's delete.
 */
async function deleteBike(ctx, id, { signal } = {}) {
    const what = `DELETE /bikes/${id}`;
    const etag = ctx.states.etagOf(id);
    const { answer, unknown } = await persist((bounded) => ctx.api.DELETE('/bikes/{id}', {
        params: { path: { id }, header: etag === undefined ? undefined : { 'If-Match': etag } },
        signal: bounded,
    }), { ...ctx.persistence(what, signal), tokens: ctx.tokens, writes: true });
    const { status } = answer.response;
    if (status === 200 || (status === 404 && unknown))
        return ctx.states.forget(id);
    if (status === 412) {
        throw new ConflictError(await getBike(ctx, id, { signal, primary: true }).catch(stillUnknown(what, unknown)));
    }
    throw refusal(what, answer.response);
}
/**
 * A read after a write whose outcome was unknown, that did not settle either: the write's outcome
 * is still unknown, whatever the read's error says of the read (a read writes nothing).
 */
function stillUnknown(what, unknown) {
    return (err) => {
        if (!unknown || !(err instanceof ServerError))
            throw err;
        throw new ServerError(`${what}: its outcome is unknown, and ${err.message}`, err.status, 'unknown', undefined, {
            cause: err,
        });
    };
}
/**
 * A random (version 4) UUID: an Idempotency-Key no one can guess. From getRandomValues, as
 * crypto.randomUUID exists only in secure contexts (not in a page served over plain HTTP).
 */
function uuidV4() {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Sends every request body gzip-compressed (`Content-Encoding: gzip`), which each route that
 * reads a body takes (docs/reference/requests-and-answers.md#content-codings). CompressionStream is in
 * browsers and Node.js alike.
 */
const gzipBodies = {
    async onRequest({ request }) {
        if (request.body === null)
            return undefined;
        const plain = new Blob([await request.arrayBuffer()]);
        const gzipped = await new Response(plain.stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer();
        const headers = new Headers(request.headers);
        headers.set('Content-Encoding', 'gzip');
        return new Request(request, { body: gzipped, headers });
    },
};

/**
 * The filters as the query's type has them, each repeatable one a list: openapi-fetch writes one
 * value (`vendor=Trek`) as it writes a list of one.
 */
const filterQuery = (filters) => filters;

/**
 * GET /bikes/facets (docs/reference/browse-and-sync.md#facets): for the bikes that pass `filters` (those of
 * `pages`, `q` included), the total, each facet's values with their counts (each counted without
 * its own filter: a storefront's checkboxes) and the range of minimum prices in each currency.
 * `facets`: which to count; all five when absent.
 */
async function facets(ctx, filters = {}, { facets: names, signal } = {}) {
    const { answer } = await persist((bounded) => ctx.api.GET('/bikes/facets', {
        params: { query: { ...filterQuery(filters), facets: names?.join(',') } },
        signal: bounded,
    }), ctx.persistence('GET /bikes/facets', signal));
    if (!answer.data)
        throw refusal('GET /bikes/facets', answer.response);
    return answer.data;
}

/** A page of the feed: at most this many changes. */
const PAGE = 1000;
/** How many of the latest changes' cursors are kept to drop a change met twice. */
const REMEMBERED = 1000;
/**
 * Changes a stream may have brought and `onChange` not yet taken: past them the stream is closed,
 * and, once `onChange` has taken them, the feed is read by pages again, each when the one before
 * is taken. An EventSource cannot be paused, so a slow `onChange` holds at most this many.
 */
const QUEUED = PAGE;
/**
 * The catalog, then every change to it, each once and in order, handed to `onChange` one at a
 * time (an async `onChange` is awaited before the next). First the whole catalog as a `list`
 * (GET /bikes/all), unless `from` says where to go on from; then the feed from the list's
 * `Catalog-Cursor`: an event stream where there is an EventSource (browsers), otherwise pages of
 * GET /bikes/changes. Where the feed cannot go on (410: pruned past the cursor, or another
 * history of the catalog; or a cursor the service no longer opens), the catalog is listed again.
 * A service that does not answer is asked again, for as long as it takes (`onStatus`: `offline`).
 * Resolves once `signal` aborts; rejects with what `onChange` throws, or a refusal that asking
 * again cannot change.
 */
async function follow(ctx, onChange, { from, signal, pollMs = 1000, onStatus } = {}) {
    let status;
    const report = (now) => {
        if (now === status)
            return;
        status = now;
        onStatus?.(now);
    };
    // Every change comes once: a cursor met again (a reconnection that overlaps) is dropped.
    const recent = new Set();
    const deliver = async (change) => {
        if (recent.has(change.cursor))
            return;
        recent.add(change.cursor);
        if (recent.size > REMEMBERED)
            recent.delete(recent.values().next().value);
        await onChange(change);
    };
    const feed = { ctx, deliver, signal, pollMs, report, status: () => status };
    let cursor = from;
    try {
        for (;;) {
            if (cursor === undefined) {
                const list = await listAll(feed);
                recent.clear();
                await onChange(list);
                cursor = list.cursor;
            }
            await (ctx.EventSource ? streamFrom(feed, cursor, ctx.EventSource) : pagesFrom(feed, cursor));
            // They return only where the feed cannot go on from where it stood.
            cursor = undefined;
        }
    }
    catch (err) {
        if (signal?.aborted)
            return;
        throw err;
    }
}
/** How follow's requests persist: for as long as it takes, `offline` meanwhile, `catching-up` once answered. */
function persistence(feed, what) {
    return {
        ...feed.ctx.persistence(what, feed.signal),
        attempts: Infinity,
        onUnsettled: () => feed.report('offline'),
    };
}
/** GET /bikes/all, and the feed's point it is consistent with. */
async function listAll(feed) {
    const { ctx } = feed;
    const what = 'GET /bikes/all';
    const { answer } = await persist((bounded) => ctx.api.GET('/bikes/all', { signal: bounded }), persistence(feed, what));
    feed.report('catching-up');
    if (!answer.data)
        throw refusal(what, answer.response);
    const cursor = answer.response.headers.get('Catalog-Cursor');
    if (cursor === null)
        throw new CatalogError(`${what} answered no Catalog-Cursor`, answer.response.status);
    return { type: 'list', bikes: answer.data, cursor };
}
/**
 * A page of the feed after `cursor`, delivered, and the cursor after it; or `gone` where the feed
 * cannot go on from `cursor`. An empty page moves the cursor to its `Catalog-Cursor`: where the
 * follower stands, which pruning does not pass while the follower keeps up.
 */
async function pageAfter(feed, cursor) {
    const what = 'GET /bikes/changes';
    const { answer } = await persist((bounded) => feed.ctx.api.GET('/bikes/changes', {
        params: { query: { since: cursor, limit: PAGE } },
        signal: bounded,
    }), persistence(feed, what));
    const { response, data } = answer;
    const refusedCursor = response.status === 400 && response.headers.get('X-Invalid-Field') === 'query.since';
    if (response.status === 410 || refusedCursor)
        return { gone: true };
    if (!data)
        throw refusal(what, response);
    const full = data.length === PAGE;
    // Caught up, a page that is not full is the next changes as they come, not a backlog.
    if (full || (data.length > 0 && feed.status() !== 'caught-up'))
        feed.report('catching-up');
    for (const change of data) {
        await feed.deliver(change);
        cursor = change.cursor;
    }
    if (data.length === 0)
        cursor = response.headers.get('Catalog-Cursor') ?? cursor;
    if (!full)
        feed.report('caught-up');
    return { cursor, full };
}
/** Pages of the feed from `cursor`, for as long as it goes on. */
async function pagesFrom(feed, from) {
    let cursor = from;
    for (;;) {
        const page = await pageAfter(feed, cursor);
        if ('gone' in page)
            return;
        cursor = page.cursor;
        if (!page.full)
            await sleep(feed.pollMs, feed.signal);
    }
}
/**
 * The feed by pages until caught up, then as an event stream, for as long as it goes on. A stream
 * that fails (the service away: an EventSource would reconnect by itself, saying nothing; an
 * answer that ends it, 410, 429, 503, which it is not shown), or that brings more than `onChange`
 * takes (QUEUED), is closed, and pages from its last event say what it was, give what came
 * meanwhile, and catch up before a stream opens again.
 */
async function streamFrom(feed, from, EventSource) {
    let cursor = from;
    for (;;) {
        const page = await pageAfter(feed, cursor);
        if ('gone' in page)
            return;
        cursor = page.cursor;
        if (page.full)
            continue;
        const ended = await stream(feed, cursor, EventSource);
        // Not straight back to a stream that was refused (too many streams: 429).
        if (ended.failed)
            await sleep(feed.pollMs, feed.signal);
        cursor = ended.cursor;
    }
}
/**
 * One EventSource from `since`, its events delivered in order; once it has failed or brought
 * QUEUED changes not yet taken, closed, and the last one's cursor once `onChange` has taken it.
 */
function stream(feed, since, EventSource) {
    const { ctx, deliver, signal } = feed;
    return new Promise((resolve, reject) => {
        if (signal?.aborted)
            return reject(signal.reason);
        const source = new EventSource(`${ctx.baseUrl}/bikes/changes?since=${encodeURIComponent(since)}`);
        let cursor = since;
        let delivered = Promise.resolve();
        let queued = 0;
        let closed = false;
        let stopped = false;
        const close = () => {
            closed = true;
            source.close();
            signal?.removeEventListener('abort', aborted);
        };
        const stop = (err) => {
            stopped = true;
            if (!closed)
                close();
            reject(err);
        };
        const end = (unanswered) => {
            close();
            void delivered.then(() => stopped || resolve({ cursor, failed: unanswered }));
        };
        const aborted = () => stop(signal?.reason);
        signal?.addEventListener('abort', aborted, { once: true });
        source.addEventListener('message', (event) => {
            if (closed)
                return;
            let change;
            try {
                change = JSON.parse(event.data);
            }
            catch (err) {
                return stop(err);
            }
            cursor = change.cursor;
            queued++;
            delivered = delivered
                .then(() => (stopped ? undefined : deliver(change)))
                .then(() => void queued--)
                .catch(stop);
            if (queued >= QUEUED)
                end(false);
        });
        // A stream that fails, however (CONNECTING: the EventSource would try again by itself; CLOSED:
        // an answer that ended it), is closed: pages say what it was, and whether the service answers.
        source.addEventListener('error', () => {
            if (!closed)
                end(true);
        });
    });
}

/**
 * GET /bikes, page after page: each page's bikes, the next page asked for at the address its
 * `Link: <...>; rel="next"` gives, as it is, until a page has none
 * (docs/reference/browse-and-sync.md#paged-listing). `limit` is the size of a page (1 to 250; 24 when absent).
 */
async function* pages(ctx, filters = {}, sort, { limit, signal } = {}) {
    let next;
    for (;;) {
        // The next page's query, from its address: openapi-fetch then sends it unchanged.
        const query = next;
        const { answer } = await persist((bounded) => query === undefined
            ? ctx.api.GET('/bikes', { params: { query: { ...filterQuery(filters), sort, limit } }, signal: bounded })
            : ctx.api.GET('/bikes', { querySerializer: () => query, signal: bounded }), ctx.persistence('GET /bikes', signal));
        if (!answer.data)
            throw refusal('GET /bikes', answer.response);
        yield answer.data;
        const link = nextLink(answer.response.headers.get('Link'));
        if (link === undefined)
            return;
        next = new URL(link, ctx.baseUrl).search.slice(1);
    }
}
/** The target of a `Link` header's `rel="next"` (RFC 8288), or undefined. */
function nextLink(header) {
    for (const [, target, params] of (header ?? '').matchAll(/<([^>]*)>([^,]*)/g)) {
        if (/;\s*rel="?([^";]*\s)?next(\s[^";]*)?"?/i.test(params))
            return target;
    }
    return undefined;
}

/**
 * The token writes are signed with: asked for when first needed, and again before it expires, as
 * its `exp` and `iat` claims say (read, not verified: the service verifies). A token whose `exp`
 * cannot be read is asked for each time: its source knows when it ends. A token the service
 * refuses is renewed once (`renew`, by persist).
 */
class Tokens {
    source;
    token;
    renewAt = 0;
    constructor(source) {
        this.source = source;
    }
    async authorization() {
        if (this.token === undefined || Date.now() >= this.renewAt) {
            const pending = this.source();
            // Requests meanwhile wait for this one rather than each asking for a token.
            this.token = pending;
            this.renewAt = Infinity;
            pending.then((token) => {
                if (this.token === pending)
                    this.renewAt = renewalTime(token);
            }, () => {
                if (this.token === pending)
                    this.token = undefined;
            });
        }
        const token = (await this.token).trim();
        if (!B64TOKEN.test(token)) {
            this.token = undefined;
            // Never the token itself in the message: it may be a working one with a stray character.
            throw new BlockedError('the token is not one an Authorization header carries (RFC 6750: letters, digits and -._~+/, then any =): nothing was sent');
        }
        return `Bearer ${token}`;
    }
    /** Forgets the token, so the next request gets another. */
    renew() {
        this.token = undefined;
    }
}
/**
 * A bearer token as RFC 6750 writes it (a JWT is one). Anything else, a space or a newline inside
 * above all, would not reach the service as sent: fetch refuses it, printing it, or the service
 * reads another token from the header.
 */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
/**
 * When a token that came now should be renewed (Date.now()'s milliseconds): a quarter of its life
 * before its `exp`, a minute at most. Where our clock says that time has passed already (a clock
 * ahead of the issuer's), that long after it came, so that a token is not asked for on every
 * request. Now, when the token does not say.
 */
function renewalTime(token) {
    const { exp, iat } = claimsOf(token);
    if (typeof exp !== 'number')
        return 0;
    const life = typeof iat === 'number' ? exp - iat : 0;
    const margin = Math.min(60, life / 4);
    const byClock = (exp - margin) * 1000;
    return byClock > Date.now() ? byClock : Date.now() + (life - margin) * 1000;
}
/** A JWT's claims, unverified; {} for a token that is not one. */
function claimsOf(token) {
    const payload = token.split('.')[1];
    try {
        const claims = JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/')));
        return typeof claims === 'object' && claims !== null ? claims : {};
    }
    catch {
        return {};
    }
}
/** A token source as the function Tokens asks. */
function tokenFunction(source) {
    return typeof source === 'string' ? async () => source : async () => source();
}

/** A client of the bike catalog service at `baseUrl`, with the rules of docs/clients.md built in. */
function createCatalogClient(options) {
    const { baseUrl, username, attempts = 10, timeoutMs = 60_000 } = options;
    const api = createClient({ baseUrl, fetch: options.fetch });
    if (options.compress)
        api.use(gzipBodies);
    const base = baseUrl.replace(/\/+$/, '');
    const withheld = (bounded) => corsRefused(`${base}/healthz`, options.fetch ?? fetch, bounded);
    const persistence = (what, signal) => ({ what, attempts, timeoutMs, signal, withheld });
    const { apiKey } = options;
    if (apiKey !== undefined && options.token !== undefined)
        throw new TypeError('give the client a token or an apiKey, not both');
    const issued = async () => {
        const { answer } = await persist((bounded) => api.POST('/api/user', {
            body: username === undefined || apiKey !== undefined ? undefined : { username },
            // An API key is traded for a token of its own (docs/reference/callers.md#api-keys).
            ...(apiKey !== undefined && { headers: { Authorization: `Bearer ${apiKey}` } }),
            signal: bounded,
        }), persistence('POST /api/user'));
        if (answer.data)
            return answer.data.token;
        throw refusal(apiKey === undefined
            ? 'POST /api/user (where the service gives no tokens, give the client a `token` or an `apiKey`)'
            : 'POST /api/user (trading the API key)', answer.response);
    };
    const tokens = new Tokens(options.token === undefined ? issued : tokenFunction(options.token));
    api.use(signWrites(tokens));
    const globalEventSource = globalThis.EventSource;
    const ctx = {
        api,
        baseUrl: base,
        tokens,
        states: new BikeStates(),
        persistence,
        EventSource: options.EventSource === undefined ? globalEventSource : (options.EventSource ?? undefined),
    };
    return {
        get: (id, callOptions) => getBike(ctx, id, callOptions),
        create: (bike, callOptions) => createBike(ctx, bike, callOptions),
        update: (bike, changes, callOptions) => updateBike(ctx, bike, changes, callOptions),
        delete: (id, callOptions) => deleteBike(ctx, id, callOptions),
        pages: (filters, sort, callOptions) => pages(ctx, filters, sort, callOptions),
        facets: (filters, callOptions) => facets(ctx, filters, callOptions),
        follow: (onChange, followOptions) => follow(ctx, onChange, followOptions),
        api,
    };
}
/** Signs every write with the client's token (one that comes with its own Authorization is left as it is). */
function signWrites(tokens) {
    return {
        async onRequest({ request, schemaPath }) {
            const read = request.method === 'GET' || request.method === 'HEAD';
            if (read || schemaPath === '/api/user' || request.headers.has('Authorization'))
                return undefined;
            const authorization = await tokens.authorization().catch((err) => {
                // Not a lost connection to try again (retry.ts): what the token's source said.
                if (err instanceof CatalogError)
                    throw err;
                throw new CatalogError(`no token: ${err instanceof Error ? err.message : String(err)}`, undefined, {
                    cause: err,
                });
            });
            request.headers.set('Authorization', authorization);
            return request;
        },
    };
}
/**
 * Whether the browser withholds the service's answers from this page (CORS): a request the page
 * may read fails, while one it may not (`no-cors`: an opaque answer) comes back, so the service is
 * there. Outside a browser there is no such thing: false.
 */
async function corsRefused(url, send, signal) {
    if (typeof globalThis.document === 'undefined')
        return false;
    // Not from a cache, which would answer for a service that is gone (not every RequestInit type knows `cache`).
    const fresh = { cache: 'no-store' };
    const answered = (init) => send(url, { ...fresh, ...init, credentials: 'omit', signal }).then(() => true, () => false);
    return !(await answered({ mode: 'cors' })) && (await answered({ mode: 'no-cors' }));
}

/** The message is not one the secret signed, or is too old (or too far ahead) to be taken. */
class WebhookVerificationError extends Error {
    name = 'WebhookVerificationError';
}
/** How far a webhook-timestamp may be from now, either way. */
const TOLERANCE_SECONDS = 5 * 60;
function header(headers, name) {
    if (typeof headers.get === 'function')
        return headers.get(name) ?? undefined;
    const record = headers;
    const value = record[name] ?? Object.entries(record).find(([key]) => key.toLowerCase() === name)?.[1];
    return Array.isArray(value) ? value.join(', ') : value;
}
function fromBase64(text) {
    try {
        return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
    }
    catch {
        return undefined;
    }
}
/**
 * The event, once `body` (the request's bytes, exactly as they came) is proved to be signed with
 * `secret`; WebhookVerificationError otherwise. Deduplicate by `webhook-id`, order by `cursor`.
 */
async function verifyWebhook(secret, headers, body, now = new Date()) {
    const id = header(headers, 'webhook-id');
    const timestamp = header(headers, 'webhook-timestamp');
    const signatures = header(headers, 'webhook-signature');
    if (!id || !timestamp || !signatures)
        throw new WebhookVerificationError('missing webhook-id, -timestamp or -signature');
    if (!/^\d+$/.test(timestamp))
        throw new WebhookVerificationError('webhook-timestamp is not a number of seconds');
    if (Math.abs(now.getTime() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) {
        throw new WebhookVerificationError('webhook-timestamp is too far from now');
    }
    const keyBytes = fromBase64(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
    if (!keyBytes)
        throw new WebhookVerificationError('the secret is not whsec_ and base64');
    const key = await crypto.subtle.importKey('raw', keyBytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
    const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
    const signed = new TextEncoder().encode(`${id}.${timestamp}.${text}`);
    for (const signature of signatures.split(' ')) {
        const [version, value] = signature.split(',');
        const mac = version === 'v1' && value ? fromBase64(value) : undefined;
        // crypto.subtle.verify compares in constant time.
        if (mac && (await crypto.subtle.verify('HMAC', key, mac, signed)))
            return JSON.parse(text);
    }
    throw new WebhookVerificationError('no signature matches');
}

export { BlockedError, CatalogError, ConflictError, InsufficientScopeError, InvalidTokenError, IssuanceClosedError, NotFoundError, RequestError, ServerError, TokenMissingError, WebhookVerificationError, createCatalogClient, verifyWebhook };
