type HttpMethod = "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace";
type OkStatus = 200 | 201 | 202 | 203 | 204 | 206 | 207 | "2XX";
type ErrorStatus = 500 | 501 | 502 | 503 | 504 | 505 | 506 | 507 | 508 | 510 | 511 | '5XX' | 400 | 401 | 402 | 403 | 404 | 405 | 406 | 407 | 408 | 409 | 410 | 411 | 412 | 413 | 414 | 415 | 416 | 417 | 418 | 420 | 421 | 422 | 423 | 424 | 425 | 426 | 427 | 428 | 429 | 430 | 431 | 444 | 450 | 451 | 497 | 498 | 499 | '4XX' | "default";
type PathsWithMethod<Paths extends {}, PathnameMethod extends HttpMethod> = {
    [Pathname in keyof Paths]: Paths[Pathname] extends {
        [K in PathnameMethod]: any;
    } ? Pathname : never;
}[keyof Paths];
type ResponseObjectMap<T> = T extends {
    responses: any;
} ? T["responses"] : unknown;
type ResponseContent<T> = T extends {
    content: any;
} ? T["content"] : unknown;
type OperationRequestBody<T> = "requestBody" extends keyof T ? T["requestBody"] : never;
type PickRequestBody<T> = "requestBody" extends keyof T ? Pick<T, "requestBody"> : never;
type IsOperationRequestBodyOptional<T> = RequiredKeysOf<PickRequestBody<T>> extends never ? true : false;
type OperationRequestBodyMediaContent<T> = IsOperationRequestBodyOptional<T> extends true ? ResponseContent<NonNullable<OperationRequestBody<T>>> | undefined : ResponseContent<OperationRequestBody<T>>;
type OperationRequestBodyContent<T> = FilterKeys<OperationRequestBodyMediaContent<T>, MediaType> extends never ? FilterKeys<NonNullable<OperationRequestBodyMediaContent<T>>, MediaType> | undefined : FilterKeys<OperationRequestBodyMediaContent<T>, MediaType>;
type SuccessResponse<T extends Record<string | number, any>, Media extends MediaType = MediaType> = GetResponseContent<T, Media, OkStatus>;
type GetResponseContent<T extends Record<string | number, any>, Media extends MediaType = MediaType, ResponseCode extends keyof T = keyof T> = ResponseCode extends keyof T ? {
    [K in ResponseCode]: T[K]["content"] extends Record<string, any> ? FilterKeys<T[K]["content"], Media> extends never ? T[K]["content"] : FilterKeys<T[K]["content"], Media> : K extends keyof T ? T[K]["content"] : never;
}[ResponseCode] : never;
type ErrorResponse<T extends Record<string | number, any>, Media extends MediaType = MediaType> = GetResponseContent<T, Media, ErrorStatus>;
type FilterKeys<Obj, Matchers> = Obj[keyof Obj & Matchers];
type MediaType = `${string}/${string}`;
type RequiredKeysOfHelper<T> = {
    [K in keyof T]: {} extends Pick<T, K> ? never : K;
}[keyof T];
type RequiredKeysOf<T> = RequiredKeysOfHelper<T> extends undefined ? never : RequiredKeysOfHelper<T>;
type $Read<T> = {
    readonly $read: T;
};
type $Write<T> = {
    readonly $write: T;
};
type Readable<T> = T extends $Write<any> ? never : T extends $Read<infer U> ? Readable<U> : T extends (infer E)[] ? Readable<E>[] : T extends object ? {
    [K in keyof T as NonNullable<T[K]> extends $Write<any> ? never : K]: Readable<T[K]>;
} : T;
type Writable<T> = T extends $Read<any> ? never : T extends $Write<infer U> ? Writable<U> : T extends (infer E)[] ? Writable<E>[] : T extends object ? {
    [K in keyof T as NonNullable<T[K]> extends $Read<any> ? never : K]: Writable<T[K]>;
} & {
    [K in keyof T as NonNullable<T[K]> extends $Read<any> ? K : never]?: never;
} : T;

/** Options for each client instance */
interface ClientOptions extends Omit<RequestInit, "headers"> {
  /** set the common root URL for all API requests */
  baseUrl?: string;
  /** custom fetch (defaults to globalThis.fetch) */
  fetch?: (input: Request) => Promise<Response>;
  /** custom Request (defaults to globalThis.Request) */
  Request?: typeof Request;
  /** global querySerializer */
  querySerializer?: QuerySerializer<unknown> | QuerySerializerOptions;
  /** global bodySerializer */
  bodySerializer?: BodySerializer<unknown>;
  /** global pathSerializer */
  pathSerializer?: PathSerializer;
  headers?: HeadersOptions;
  /** RequestInit extension object to pass as 2nd argument to fetch when supported (defaults to undefined) */
  requestInitExt?: Record<string, unknown>;
}

type HeadersOptions =
  | Required<RequestInit>["headers"]
  | Record<string, string | number | boolean | (string | number | boolean)[] | null | undefined>;

type QuerySerializer<T> = (
  query: T extends { parameters: any } ? NonNullable<T["parameters"]["query"]> : Record<string, unknown>,
) => string;

/** @see https://swagger.io/docs/specification/serialization/#query */
type QuerySerializerOptions = {
  /** Set serialization for arrays. @see https://swagger.io/docs/specification/serialization/#query */
  array?: {
    /** default: "form" */
    style: "form" | "spaceDelimited" | "pipeDelimited";
    /** default: true */
    explode: boolean;
  };
  /** Set serialization for objects. @see https://swagger.io/docs/specification/serialization/#query */
  object?: {
    /** default: "deepObject" */
    style: "form" | "deepObject";
    /** default: true */
    explode: boolean;
  };
  /**
   * The `allowReserved` keyword specifies whether the reserved characters
   * `:/?#[]@!$&'()*+,;=` in parameter values are allowed to be sent as they
   * are, or should be percent-encoded. By default, allowReserved is `false`,
   * and reserved characters are percent-encoded.
   * @see https://swagger.io/docs/specification/serialization/#query
   */
  allowReserved?: boolean;
};

type BodySerializer<T> = (body: OperationRequestBodyContent<T>) => any;

type PathSerializer = (pathname: string, pathParams: Record<string, unknown>) => string;

type BodyType<T = unknown> = {
  json: T;
  text: Awaited<ReturnType<Response["text"]>>;
  blob: Awaited<ReturnType<Response["blob"]>>;
  arrayBuffer: Awaited<ReturnType<Response["arrayBuffer"]>>;
  stream: Response["body"];
};
type ParseAs = keyof BodyType;
type ParseAsResponse<T, Options> = Options extends {
  parseAs: ParseAs;
}
  ? BodyType<T>[Options["parseAs"]]
  : T;

interface DefaultParamsOption {
  params?: {
    query?: Record<string, unknown>;
  };
}

type ParamsOption<T> = T extends {
  parameters: any;
}
  ? RequiredKeysOf<T["parameters"]> extends never
    ? { params?: T["parameters"] }
    : { params: T["parameters"] }
  : DefaultParamsOption;

// Writable<T> strips $Read markers (readOnly properties excluded from request body)
type RequestBodyOption<T> =
  Writable<OperationRequestBodyContent<T>> extends never
    ? { body?: never }
    : IsOperationRequestBodyOptional<T> extends true
      ? { body?: Writable<OperationRequestBodyContent<T>> }
      : { body: Writable<OperationRequestBodyContent<T>> };

type FetchOptions<T> = RequestOptions<T> & Omit<RequestInit, "body" | "headers">;

// Readable<T> strips $Write markers (writeOnly properties excluded from response)
type FetchResponse<T extends Record<string | number, any>, Options, Media extends MediaType> =
  | {
      data: ParseAsResponse<Readable<SuccessResponse<ResponseObjectMap<T>, Media>>, Options>;
      error?: never;
      response: Response;
    }
  | {
      data?: never;
      error: Readable<ErrorResponse<ResponseObjectMap<T>, Media>>;
      response: Response;
    };

type RequestOptions<T> = ParamsOption<T> &
  RequestBodyOption<T> & {
    baseUrl?: string;
    querySerializer?: QuerySerializer<T> | QuerySerializerOptions;
    bodySerializer?: BodySerializer<T>;
    pathSerializer?: PathSerializer;
    parseAs?: ParseAs;
    fetch?: ClientOptions["fetch"];
    headers?: HeadersOptions;
    middleware?: Middleware[];
  };

type MergedOptions<T = unknown> = {
  baseUrl: string;
  parseAs: ParseAs;
  querySerializer: QuerySerializer<T>;
  bodySerializer: BodySerializer<T>;
  pathSerializer: PathSerializer;
  fetch: typeof globalThis.fetch;
};

interface MiddlewareRequestParams {
  query?: Record<string, unknown>;
  header?: Record<string, unknown>;
  path?: Record<string, unknown>;
  cookie?: Record<string, unknown>;
}

interface MiddlewareCallbackParams {
  /** Current Request object */
  request: Request;
  /** The original OpenAPI schema path (including curly braces) */
  readonly schemaPath: string;
  /** OpenAPI parameters as provided from openapi-fetch */
  readonly params: MiddlewareRequestParams;
  /** Unique ID for this request */
  readonly id: string;
  /** createClient options (read-only) */
  readonly options: MergedOptions;
}

type MiddlewareOnRequest = (
  options: MiddlewareCallbackParams,
) => void | Request | Response | undefined | Promise<Request | Response | undefined | void>;
type MiddlewareOnResponse = (
  options: MiddlewareCallbackParams & { response: Response },
) => void | Response | undefined | Promise<Response | undefined | void>;
type MiddlewareOnError = (
  options: MiddlewareCallbackParams & { error: unknown },
) => void | Response | Error | Promise<void | Response | Error>;

type Middleware =
  | {
      onRequest: MiddlewareOnRequest;
      onResponse?: MiddlewareOnResponse;
      onError?: MiddlewareOnError;
    }
  | {
      onRequest?: MiddlewareOnRequest;
      onResponse: MiddlewareOnResponse;
      onError?: MiddlewareOnError;
    }
  | {
      onRequest?: MiddlewareOnRequest;
      onResponse?: MiddlewareOnResponse;
      onError: MiddlewareOnError;
    };

/** This type helper makes the 2nd function param required if params/requestBody are required; otherwise, optional */
type MaybeOptionalInit<Params, Location extends keyof Params> =
  RequiredKeysOf<FetchOptions<FilterKeys<Params, Location>>> extends never
    ? FetchOptions<FilterKeys<Params, Location>> | undefined
    : FetchOptions<FilterKeys<Params, Location>>;

// The final init param to accept.
// - Determines if the param is optional or not.
// - Performs arbitrary [key: string] addition.
// Note: the addition MUST happen after all the inference happens (otherwise TS can’t infer if init is required or not).
type InitParam<Init> =
  RequiredKeysOf<Init> extends never ? [(Init & { [key: string]: unknown })?] : [Init & { [key: string]: unknown }];

type ClientMethod<
  Paths extends Record<string, Record<HttpMethod, {}>>,
  Method extends HttpMethod,
  Media extends MediaType,
> = <Path extends PathsWithMethod<Paths, Method>, Init extends MaybeOptionalInit<Paths[Path], Method>>(
  url: Path,
  ...init: InitParam<Init>
) => Promise<FetchResponse<Paths[Path][Method], Init, Media>>;

type ClientRequestMethod<Paths extends Record<string, Record<HttpMethod, {}>>, Media extends MediaType> = <
  Method extends HttpMethod,
  Path extends PathsWithMethod<Paths, Method>,
  Init extends MaybeOptionalInit<Paths[Path], Method>,
>(
  method: Method,
  url: Path,
  ...init: InitParam<Init>
) => Promise<FetchResponse<Paths[Path][Method], Init, Media>>;

interface Client<Paths extends {}, Media extends MediaType = MediaType> {
  request: ClientRequestMethod<Paths, Media>;
  /** Call a GET endpoint */
  GET: ClientMethod<Paths, "get", Media>;
  /** Call a PUT endpoint */
  PUT: ClientMethod<Paths, "put", Media>;
  /** Call a POST endpoint */
  POST: ClientMethod<Paths, "post", Media>;
  /** Call a DELETE endpoint */
  DELETE: ClientMethod<Paths, "delete", Media>;
  /** Call a OPTIONS endpoint */
  OPTIONS: ClientMethod<Paths, "options", Media>;
  /** Call a HEAD endpoint */
  HEAD: ClientMethod<Paths, "head", Media>;
  /** Call a PATCH endpoint */
  PATCH: ClientMethod<Paths, "patch", Media>;
  /** Call a TRACE endpoint */
  TRACE: ClientMethod<Paths, "trace", Media>;
  /** Register middleware */
  use(...middleware: Middleware[]): void;
  /** Unregister middleware */
  eject(...middleware: Middleware[]): void;
}

/**
 * Where write tokens come from: a token, or a function that gives one (your identity provider, a
 * token your operator issued, your own call to POST /api/user). Without one, the client asks the
 * service's POST /api/user.
 */
type TokenSource = string | (() => string | Promise<string>);

/**
 * This file was auto-generated by openapi-typescript.
 * Do not make direct changes to the file.
 */
interface paths {
    "/bikes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Browse bikes: filtered, sorted, a page at a time
         * @description A page of bikes (24 unless `limit` says, at most 250) that pass every filter given, in the order `sort` names. While another page follows, `Link: <...>; rel="next"` gives its address, with the cursor that starts it (keyset: each page costs the same however deep). `GET /bikes/` is the same route.
         */
        get: operations["browseBikes"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/bikes/facets": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Facet counts, the total and the price range of GET /bikes's filters
         * @description How many bikes pass every filter and `q` (`total`), each facet of `facets` with its values and their counts, each counted with every filter but that facet's own (a selected value listed even at 0), and per currency the lowest and highest minimum price, with every filter but the price range.
         */
        get: operations["bikeFacets"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/bikes/all": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List every bike
         * @description Every bike, oldest first (creation order). No pagination: the array is streamed.
         */
        get: operations["listBikes"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/bikes/changes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Follow the changes to the catalog
         * @description The changes after a cursor, oldest first: each an `upsert` (the whole bike as it is after it) or a `delete` (its id), with the cursor to go on from. Pass the last one's `cursor` as `since` for the next page; `[]` means caught up. Without `since`, from the oldest change kept. Every list answers with `Catalog-Cursor`, the point its rows are consistent with: follow from it and nothing is missed or repeated. A bike's changes come in the order they were committed, and a change comes only once no transaction that could still write one before it is running. A cursor older than what is kept, or of another history of the catalog (a restore), is 410: list again. With `Accept: text/event-stream` (an EventSource), the same changes as Server-Sent Events, as they commit, through any instance.
         */
        get: operations["bikeChanges"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/bikes/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a bike by id */
        get: operations["getBike"];
        /**
         * Replace a bike
         * @description Stores the body under the path id (a body id is not used as the key; the handle is stored as given). A well-formed id with no bike creates it there. Every failure, including a body that fails validation, answers 404, as the specification says; a body in a Content-Encoding the service cannot decode is no failure of the replace, but an unsupported media: 415.
         */
        put: operations["replaceBike"];
        post?: never;
        /** Delete a bike */
        delete: operations["deleteBike"];
        options?: never;
        head?: never;
        /**
         * Update some fields of a bike
         * @description Writes only the fields in the body; each must be valid as on create (a priceRange must be complete). A body id is ignored; a handle is written as given; a new title does not change the handle. No body is an empty patch.
         */
        patch: operations["updateBike"];
        trace?: never;
    };
    "/bikes/by-handle/{handle}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get the first bike with a handle
         * @description Handles are not unique: the bike created first wins.
         */
        get: operations["getBikeByHandle"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/bikes/search/by-title": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Search bikes by title
         * @description Case-sensitive substring match on the title, oldest first. `%`, `_` and `\` match themselves.
         */
        get: operations["searchBikesByTitle"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/bikes/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create a bike
         * @description The server makes the id (UUID v4) and the handle (from the title); a body id or handle is ignored. A field the bike does not have is ignored too: not stored, not returned. `POST /bikes` is the same route.
         */
        post: operations["createBike"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/user": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Get a bearer token
         * @description No authentication. The token is an HS256 JWT carrying `username`, `iat`, `exp` and `jti` (unique to it), valid for 1800 seconds. With an API key as the bearer token (`Authorization: Bearer bk_live_...`, from the operator's `npm run keys`), the token is the key's: it carries the key's label and scopes, in either mode, and stops working once the key is revoked. Where the operator has closed issuance (`TOKEN_ISSUANCE=closed`), a request without a key is 403: tokens then come from API keys, the operator or the identity provider.
         */
        post: operations["issueToken"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Whether the process is up */
        get: operations["liveness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Whether the database is usable */
        get: operations["readiness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The service's metrics, in Prometheus's text format */
        get: operations["metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This document */
        get: operations["openApiDocument"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This document, as a page (Swagger UI) */
        get: operations["docsPage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs/swagger-initializer.js": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The page's script */
        get: operations["docsPageScript"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs/{asset}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A file of the page's */
        get: operations["docsPageAsset"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
interface components {
    schemas: {
        /** @description An amount and its currency. */
        Money: {
            amount: number;
            currencyCode: string;
        };
        /** @description The lowest and highest price. */
        PriceRange: {
            minPrice: components["schemas"]["Money"];
            maxPrice: components["schemas"]["Money"];
        };
        /** @description A bike as the service returns it: exactly these fields, each as the client sent it. */
        Bike: {
            /** Format: uuid */
            id: string;
            handle: string;
            title: string;
            productType: string;
            createdAt: string;
            description: string;
            vendor: string;
            availableForSale: boolean;
            totalInventory: number;
            priceRange: components["schemas"]["PriceRange"];
        };
        /** @description Every field of a bike: those a create takes, plus a non-empty id and handle. Strings may not contain U+0000 or a lone UTF-16 surrogate; numbers are any finite JSON number. Types are strict: "5" is not a number and "true" is not a boolean. Unknown fields are ignored. */
        BikeReplacement: {
            id: string;
            handle: string;
            title: string;
            productType: string;
            createdAt: string;
            description: string;
            vendor: string;
            availableForSale: boolean;
            totalInventory: number;
            priceRange: components["schemas"]["PriceRange"];
        };
        /** @description Any subset of the fields, each valid as on create. Strings may not contain U+0000 or a lone UTF-16 surrogate; numbers are any finite JSON number. Types are strict: "5" is not a number and "true" is not a boolean. Unknown fields are ignored. */
        BikePatch: {
            handle?: string;
            title?: string;
            productType?: string;
            createdAt?: string;
            description?: string;
            vendor?: string;
            availableForSale?: boolean;
            totalInventory?: number;
            priceRange?: components["schemas"]["PriceRange"];
        };
        /** @description Every field of a bike but id and handle, which the server makes. Strings may not contain U+0000 or a lone UTF-16 surrogate; numbers are any finite JSON number. Types are strict: "5" is not a number and "true" is not a boolean. Unknown fields are ignored. */
        NewBike: {
            title: string;
            productType: string;
            createdAt: string;
            description: string;
            vendor: string;
            availableForSale: boolean;
            totalInventory: number;
            priceRange: components["schemas"]["PriceRange"];
        };
        /** @description Who the token is for (ignored with an API key: the token is the key's). Strings may not contain U+0000 or a lone UTF-16 surrogate; numbers are any finite JSON number. Types are strict: "5" is not a number and "true" is not a boolean. Unknown fields are ignored. */
        TokenRequest: {
            /** @description Carried in the token. Optional. */
            username?: string;
        };
        /** @description A change to the catalog: an upsert carries the bike as it is after it; a delete, its id. */
        Change: {
            /** @description Where to go on from, as `since`: opaque. */
            cursor: string;
            /** @enum {string} */
            type: "upsert" | "delete";
            /** Format: uuid */
            id: string;
            bike?: components["schemas"]["Bike"];
        };
        DeletedBike: {
            /** Format: uuid */
            id: string;
        };
        Token: {
            /** @description A signed JSON Web Token (HS256), valid for 1800 s. */
            token: string;
        };
    };
    responses: never;
    parameters: {
        /**
         * @description The bike id. A value that is not a UUID names no bike: 404.
         * @example 3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41
         */
        BikeId: string;
    };
    requestBodies: never;
    headers: never;
    pathItems: never;
}
interface operations {
    browseBikes: {
        parameters: {
            query?: {
                /**
                 * @description Only this vendor (the whole string, case-sensitive); repeated, any of them.
                 * @example [
                 *       "Sentra Cycles",
                 *       "Trek"
                 *     ]
                 */
                vendor?: string[];
                /**
                 * @description Only this product type (the whole string, case-sensitive); repeated, any of them.
                 * @example [
                 *       "Hybrid"
                 *     ]
                 */
                productType?: string[];
                /**
                 * @description `true` or `false`.
                 * @example true
                 */
                availableForSale?: boolean;
                /**
                 * @description `true`: totalInventory above 0; `false`: 0 or less.
                 * @example true
                 */
                inStock?: boolean;
                /**
                 * @description The minimum price's currency code; repeated, any of them; required with `minPrice` or `maxPrice`.
                 * @example [
                 *       "USD"
                 *     ]
                 */
                currency?: string[];
                /**
                 * @description The minimum price at least this (in `currency`).
                 * @example 100
                 */
                minPrice?: number;
                /**
                 * @description The minimum price at most this (in `currency`).
                 * @example 1000
                 */
                maxPrice?: number;
                /**
                 * @description The title contains this text (case-sensitive; `%`, `_` and `\` match themselves).
                 * @example Hybrid
                 */
                titleContains?: string;
                /**
                 * @description A shopper's words, at most 200 characters: every word in the title, vendor, product type or description, in any case, accents ignored; a word of 5 to 8 letters with one typo, of 9 or more with two; the last word also as a prefix. Empty: as if not sent.
                 * @example moutain bik
                 */
                q?: string;
                /**
                 * @description The order: `created` (insertion order, the default), `title` (its first 200 characters, by code point), `price` (by currency, then minimum price), `updatedAt` (when last changed); `-` before any of these reverses it; `relevance` (with `q` alone, and its default): every word as given before typos, title before vendor, product type and description. Ties go by insertion order.
                 * @example price
                 */
                sort?: "created" | "-created" | "title" | "-title" | "price" | "-price" | "updatedAt" | "-updatedAt" | "relevance";
                /**
                 * @description Bikes per page, 1 to 250; 24 when absent.
                 * @example 24
                 */
                limit?: number;
                /**
                 * @description Where the page starts: from the `Link` of the page before. Only with the same sort and filters.
                 * @example eyJrIjoicGFnZSIsInMiOiJwcmljZSIsImEiOlsiVVNEIiwiNDk5Ljk5Il0sInEiOiI0MiJ9.c2lnbmF0dXJl
                 */
                cursor?: string;
            };
            header?: {
                /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                "X-Request-Id"?: string;
                /**
                 * @description A list; an element `primary` reads from the primary database, to see your own writes at once. Other values are ignored.
                 * @example primary
                 */
                "X-Read-From"?: string;
                /** @description On a read: the ETag of the copy you have; 304, with no body, while it is current. On a write: `*`, write only if there is no such bike (on PUT: create only); or tags, write only if the bike is in none of their states. Otherwise 412. */
                "If-None-Match"?: string;
                /** @description Write only if the bike is in this state: its strong ETag, from a read or a write (a list of them, or `*` for any state). Compared strongly: a weak tag never matches. Otherwise 412 and nothing changes. */
                "If-Match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of bikes */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    /** @description Only while the primary cannot be reached and a replica answers: `as-of=<ISO time of the newest commit the replica has>; age=<seconds since>`, or `unknown`. The answer may miss later writes. */
                    "X-Stale"?: string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    /** @description The point of the change feed (GET /bikes/changes) this answer is consistent with: follow the feed with it as `since` and you miss and repeat nothing. Opaque. */
                    "Catalog-Cursor"?: string;
                    /** @description While another page follows, its address: `</bikes?...&cursor=...>; rel="next"` (RFC 8288). Absent on the last page. */
                    Link?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example [
                     *       {
                     *         "id": "3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41",
                     *         "handle": "hybrid-bicycle-sentra",
                     *         "title": "Hybrid Bicycle Sentra",
                     *         "productType": "Hybrid",
                     *         "createdAt": "2024-03-01T10:00:00Z",
                     *         "description": "A comfortable hybrid for the city, with hydraulic disc brakes",
                     *         "vendor": "Sentra Cycles",
                     *         "availableForSale": true,
                     *         "totalInventory": 12,
                     *         "priceRange": {
                     *           "minPrice": {
                     *             "amount": 499.99,
                     *             "currencyCode": "USD"
                     *           },
                     *           "maxPrice": {
                     *             "amount": 499.99,
                     *             "currencyCode": "USD"
                     *           }
                     *         }
                     *       }
                     *     ]
                     */
                    "application/json": components["schemas"]["Bike"][];
                };
            };
            /** @description Not Modified: the If-None-Match ETag is still current; no body. */
            304: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A parameter that is not valid (`X-Invalid-Field` names it), a price range without `currency`, a parameter the route does not know, or a cursor of another sort or other filters, or not of this service. Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /**
                     * @description The first field that failed, in the order of its schema: its dotted path in the body as sent (`priceRange.minPrice.amount`), `query.` and the name of the query parameter (`query.q`), or the request header (`idempotency-key`). Absent when the body fails as a whole: malformed JSON, not an object, a media type or charset that cannot be read, or a value the database refuses.
                     * @example priceRange.minPrice.amount
                     */
                    "X-Invalid-Field"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A precondition failed (If-Match names another state of the bike, or none; If-None-Match: * and the bike exists, or it names the state the bike is in). Nothing changed. */
            412: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Precondition Failed */
                    "text/plain": string;
                };
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description What the service needs is not answering (the database; for a token of the identity provider, its key set), and nothing was written; retry after Retry-After seconds. */
            503: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Service Unavailable */
                    "text/plain": string;
                };
            };
        };
    };
    bikeFacets: {
        parameters: {
            query?: {
                /**
                 * @description Only this vendor (the whole string, case-sensitive); repeated, any of them.
                 * @example [
                 *       "Sentra Cycles",
                 *       "Trek"
                 *     ]
                 */
                vendor?: string[];
                /**
                 * @description Only this product type (the whole string, case-sensitive); repeated, any of them.
                 * @example [
                 *       "Hybrid"
                 *     ]
                 */
                productType?: string[];
                /**
                 * @description `true` or `false`.
                 * @example true
                 */
                availableForSale?: boolean;
                /**
                 * @description `true`: totalInventory above 0; `false`: 0 or less.
                 * @example true
                 */
                inStock?: boolean;
                /**
                 * @description The minimum price's currency code; repeated, any of them; required with `minPrice` or `maxPrice`.
                 * @example [
                 *       "USD"
                 *     ]
                 */
                currency?: string[];
                /**
                 * @description The minimum price at least this (in `currency`).
                 * @example 100
                 */
                minPrice?: number;
                /**
                 * @description The minimum price at most this (in `currency`).
                 * @example 1000
                 */
                maxPrice?: number;
                /**
                 * @description The title contains this text (case-sensitive; `%`, `_` and `\` match themselves).
                 * @example Hybrid
                 */
                titleContains?: string;
                /**
                 * @description A shopper's words, at most 200 characters: every word in the title, vendor, product type or description, in any case, accents ignored; a word of 5 to 8 letters with one typo, of 9 or more with two; the last word also as a prefix. Empty: as if not sent.
                 * @example moutain bik
                 */
                q?: string;
                /**
                 * @description The facets to count, a comma list of `vendor`, `productType`, `availableForSale`, `inStock`, `currency`; all when absent.
                 * @example vendor,productType
                 */
                facets?: string;
            };
            header?: {
                /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                "X-Request-Id"?: string;
                /**
                 * @description A list; an element `primary` reads from the primary database, to see your own writes at once. Other values are ignored.
                 * @example primary
                 */
                "X-Read-From"?: string;
                /** @description On a read: the ETag of the copy you have; 304, with no body, while it is current. On a write: `*`, write only if there is no such bike (on PUT: create only); or tags, write only if the bike is in none of their states. Otherwise 412. */
                "If-None-Match"?: string;
                /** @description Write only if the bike is in this state: its strong ETag, from a read or a write (a list of them, or `*` for any state). Compared strongly: a weak tag never matches. Otherwise 412 and nothing changes. */
                "If-Match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The total, the facets and the price ranges */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    /** @description Only while the primary cannot be reached and a replica answers: `as-of=<ISO time of the newest commit the replica has>; age=<seconds since>`, or `unknown`. The answer may miss later writes. */
                    "X-Stale"?: string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "total": 312,
                     *       "facets": {
                     *         "vendor": [
                     *           {
                     *             "value": "Trek",
                     *             "count": 120,
                     *             "selected": true
                     *           },
                     *           {
                     *             "value": "Giant",
                     *             "count": 95,
                     *             "selected": false
                     *           }
                     *         ]
                     *       },
                     *       "prices": [
                     *         {
                     *           "currency": "USD",
                     *           "min": 499.99,
                     *           "max": 12999
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": {
                        /** @description The bikes that pass every filter and `q`. */
                        total: number;
                        /** @description Each facet asked for: its values, most bikes first (then by value). */
                        facets: {
                            vendor?: {
                                value: string | boolean;
                                /** @description The bikes with this value that pass every filter but this facet's own. */
                                count: number;
                                /** @description The value is one of this facet's filter's. */
                                selected: boolean;
                            }[];
                            productType?: {
                                value: string | boolean;
                                /** @description The bikes with this value that pass every filter but this facet's own. */
                                count: number;
                                /** @description The value is one of this facet's filter's. */
                                selected: boolean;
                            }[];
                            availableForSale?: {
                                value: string | boolean;
                                /** @description The bikes with this value that pass every filter but this facet's own. */
                                count: number;
                                /** @description The value is one of this facet's filter's. */
                                selected: boolean;
                            }[];
                            inStock?: {
                                value: string | boolean;
                                /** @description The bikes with this value that pass every filter but this facet's own. */
                                count: number;
                                /** @description The value is one of this facet's filter's. */
                                selected: boolean;
                            }[];
                            currency?: {
                                value: string | boolean;
                                /** @description The bikes with this value that pass every filter but this facet's own. */
                                count: number;
                                /** @description The value is one of this facet's filter's. */
                                selected: boolean;
                            }[];
                        };
                        /** @description Per currency, the lowest and highest minimum price, every filter but the price range applied. */
                        prices: {
                            currency: string;
                            min: number;
                            max: number;
                        }[];
                    };
                };
            };
            /** @description Not Modified: the If-None-Match ETag is still current; no body. */
            304: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A parameter that is not valid (`X-Invalid-Field` names it), a facet not one of the five, a price range without `currency`, or a parameter the route does not know. Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /**
                     * @description The first field that failed, in the order of its schema: its dotted path in the body as sent (`priceRange.minPrice.amount`), `query.` and the name of the query parameter (`query.q`), or the request header (`idempotency-key`). Absent when the body fails as a whole: malformed JSON, not an object, a media type or charset that cannot be read, or a value the database refuses.
                     * @example priceRange.minPrice.amount
                     */
                    "X-Invalid-Field"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A precondition failed (If-Match names another state of the bike, or none; If-None-Match: * and the bike exists, or it names the state the bike is in). Nothing changed. */
            412: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Precondition Failed */
                    "text/plain": string;
                };
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description What the service needs is not answering (the database; for a token of the identity provider, its key set), and nothing was written; retry after Retry-After seconds. */
            503: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Service Unavailable */
                    "text/plain": string;
                };
            };
        };
    };
    listBikes: {
        parameters: {
            query?: never;
            header?: {
                /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                "X-Request-Id"?: string;
                /**
                 * @description A list; an element `primary` reads from the primary database, to see your own writes at once. Other values are ignored.
                 * @example primary
                 */
                "X-Read-From"?: string;
                /** @description On a read: the ETag of the copy you have; 304, with no body, while it is current. On a write: `*`, write only if there is no such bike (on PUT: create only); or tags, write only if the bike is in none of their states. Otherwise 412. */
                "If-None-Match"?: string;
                /** @description Write only if the bike is in this state: its strong ETag, from a read or a write (a list of them, or `*` for any state). Compared strongly: a weak tag never matches. Otherwise 412 and nothing changes. */
                "If-Match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every bike */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    /** @description Only while the primary cannot be reached and a replica answers: `as-of=<ISO time of the newest commit the replica has>; age=<seconds since>`, or `unknown`. The answer may miss later writes. */
                    "X-Stale"?: string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    /** @description The point of the change feed (GET /bikes/changes) this answer is consistent with: follow the feed with it as `since` and you miss and repeat nothing. Opaque. */
                    "Catalog-Cursor"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example [
                     *       {
                     *         "id": "3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41",
                     *         "handle": "hybrid-bicycle-sentra",
                     *         "title": "Hybrid Bicycle Sentra",
                     *         "productType": "Hybrid",
                     *         "createdAt": "2024-03-01T10:00:00Z",
                     *         "description": "A comfortable hybrid for the city, with hydraulic disc brakes",
                     *         "vendor": "Sentra Cycles",
                     *         "availableForSale": true,
                     *         "totalInventory": 12,
                     *         "priceRange": {
                     *           "minPrice": {
                     *             "amount": 499.99,
                     *             "currencyCode": "USD"
                     *           },
                     *           "maxPrice": {
                     *             "amount": 499.99,
                     *             "currencyCode": "USD"
                     *           }
                     *         }
                     *       }
                     *     ]
                     */
                    "application/json": components["schemas"]["Bike"][];
                };
            };
            /** @description Not Modified: the If-None-Match ETag is still current; no body. */
            304: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request failed validation. Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /**
                     * @description The first field that failed, in the order of its schema: its dotted path in the body as sent (`priceRange.minPrice.amount`), `query.` and the name of the query parameter (`query.q`), or the request header (`idempotency-key`). Absent when the body fails as a whole: malformed JSON, not an object, a media type or charset that cannot be read, or a value the database refuses.
                     * @example priceRange.minPrice.amount
                     */
                    "X-Invalid-Field"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A precondition failed (If-Match names another state of the bike, or none; If-None-Match: * and the bike exists, or it names the state the bike is in). Nothing changed. */
            412: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Precondition Failed */
                    "text/plain": string;
                };
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Over an abuse limit of this client (tokens or writes per minute, lists at once); retry after Retry-After seconds. */
            429: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Too Many Requests */
                    "text/plain": string;
                };
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description What the service needs is not answering (the database; for a token of the identity provider, its key set), and nothing was written; retry after Retry-After seconds. */
            503: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Service Unavailable */
                    "text/plain": string;
                };
            };
        };
    };
    bikeChanges: {
        parameters: {
            query?: {
                /**
                 * @description A cursor from a change or a Catalog-Cursor header. Absent: from the start.
                 * @example eyJrIjoiZmVlZCIsImkiOiJBQkNEIiwidCI6IkVGR0giLCJwIjpbIjc0MiIsIjEzIl19.c2lnbmF0dXJlLW9mLWl0
                 */
                since?: string;
                /**
                 * @description The most changes a page gives, 1 to 1000; 100 when absent. A stream gives them all.
                 * @example 100
                 */
                limit?: number;
            };
            header?: {
                /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                "X-Request-Id"?: string;
                /**
                 * @description A list; an element `primary` reads from the primary database, to see your own writes at once. Other values are ignored.
                 * @example primary
                 */
                "X-Read-From"?: string;
                /** @description On an event stream: the `id` of the last event you received, which your EventSource sends when it reconnects; the stream resumes after it (over `since`). A value that is not a cursor of this service: 400. */
                "Last-Event-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The changes, oldest first */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    /** @description Only while the primary cannot be reached and a replica answers: `as-of=<ISO time of the newest commit the replica has>; age=<seconds since>`, or `unknown`. The answer may miss later writes. */
                    "X-Stale"?: string;
                    /** @description `no` on an event stream: a proxy in front (nginx) passes each event on as it comes. */
                    "X-Accel-Buffering"?: "no";
                    /** @description The point of the change feed (GET /bikes/changes) this answer is consistent with: follow the feed with it as `since` and you miss and repeat nothing. Opaque. */
                    "Catalog-Cursor"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example [
                     *       {
                     *         "cursor": "eyJrIjoiZmVlZCIsImkiOiJBQkNEIiwidCI6IkVGR0giLCJwIjpbIjc0MiIsIjEzIl19.c2lnbmF0dXJlLW9mLWl0",
                     *         "type": "upsert",
                     *         "id": "3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41",
                     *         "bike": {
                     *           "id": "3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41",
                     *           "handle": "hybrid-bicycle-sentra",
                     *           "title": "Hybrid Bicycle Sentra",
                     *           "productType": "Hybrid",
                     *           "createdAt": "2024-03-01T10:00:00Z",
                     *           "description": "A comfortable hybrid for the city, with hydraulic disc brakes",
                     *           "vendor": "Sentra Cycles",
                     *           "availableForSale": true,
                     *           "totalInventory": 12,
                     *           "priceRange": {
                     *             "minPrice": {
                     *               "amount": 499.99,
                     *               "currencyCode": "USD"
                     *             },
                     *             "maxPrice": {
                     *               "amount": 499.99,
                     *               "currencyCode": "USD"
                     *             }
                     *           }
                     *         }
                     *       }
                     *     ]
                     */
                    "application/json": components["schemas"]["Change"][];
                    /**
                     * @example retry: 2417
                     *
                     *     id: eyJrIjoiZmVlZCIsImkiOiJBQkNEIiwidCI6IkVGR0giLCJwIjpbIjc0MiIsIjEzIl19.c2lnbmF0dXJlLW9mLWl0
                     *     data: {"cursor":"eyJrIjoiZmVlZCIsImkiOiJBQkNEIiwidCI6IkVGR0giLCJwIjpbIjc0MiIsIjEzIl19.c2lnbmF0dXJlLW9mLWl0","type":"upsert","id":"3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41","bike":{"id":"3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41","handle":"hybrid-bicycle-sentra","title":"Hybrid Bicycle Sentra","productType":"Hybrid","createdAt":"2024-03-01T10:00:00Z","description":"A comfortable hybrid for the city, with hydraulic disc brakes","vendor":"Sentra Cycles","availableForSale":true,"totalInventory":12,"priceRange":{"minPrice":{"amount":499.99,"currencyCode":"USD"},"maxPrice":{"amount":499.99,"currencyCode":"USD"}}}}
                     *
                     *     : keep-alive
                     */
                    "text/event-stream": string;
                };
            };
            /** @description `since` or `Last-Event-ID` is not a cursor of this service (tampered, or of a sort of page), or `limit` is not 1 to 1000. Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /**
                     * @description The first field that failed, in the order of its schema: its dotted path in the body as sent (`priceRange.minPrice.amount`), `query.` and the name of the query parameter (`query.q`), or the request header (`idempotency-key`). Absent when the body fails as a whole: malformed JSON, not an object, a media type or charset that cannot be read, or a value the database refuses.
                     * @example priceRange.minPrice.amount
                     */
                    "X-Invalid-Field"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The cursor is older than the changes kept, or of another history of the catalog: list again. */
            410: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Gone */
                    "text/plain": string;
                };
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description This client has as many event streams open on this instance as it may; retry after Retry-After seconds. */
            429: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Too Many Requests */
                    "text/plain": string;
                };
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The database is not answering, or a capture trigger is off (the log may lack changes), or this instance has as many event streams open as it takes; retry after Retry-After seconds. */
            503: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Service Unavailable */
                    "text/plain": string;
                };
            };
        };
    };
    getBike: {
        parameters: {
            query?: never;
            header?: {
                /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                "X-Request-Id"?: string;
                /**
                 * @description A list; an element `primary` reads from the primary database, to see your own writes at once. Other values are ignored.
                 * @example primary
                 */
                "X-Read-From"?: string;
                /** @description On a read: the ETag of the copy you have; 304, with no body, while it is current. On a write: `*`, write only if there is no such bike (on PUT: create only); or tags, write only if the bike is in none of their states. Otherwise 412. */
                "If-None-Match"?: string;
                /** @description Write only if the bike is in this state: its strong ETag, from a read or a write (a list of them, or `*` for any state). Compared strongly: a weak tag never matches. Otherwise 412 and nothing changes. */
                "If-Match"?: string;
            };
            path: {
                /**
                 * @description The bike id. A value that is not a UUID names no bike: 404.
                 * @example 3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41
                 */
                id: components["parameters"]["BikeId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The bike */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    /** @description Only while the primary cannot be reached and a replica answers: `as-of=<ISO time of the newest commit the replica has>; age=<seconds since>`, or `unknown`. The answer may miss later writes. */
                    "X-Stale"?: string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "id": "3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41",
                     *       "handle": "hybrid-bicycle-sentra",
                     *       "title": "Hybrid Bicycle Sentra",
                     *       "productType": "Hybrid",
                     *       "createdAt": "2024-03-01T10:00:00Z",
                     *       "description": "A comfortable hybrid for the city, with hydraulic disc brakes",
                     *       "vendor": "Sentra Cycles",
                     *       "availableForSale": true,
                     *       "totalInventory": 12,
                     *       "priceRange": {
                     *         "minPrice": {
                     *           "amount": 499.99,
                     *           "currencyCode": "USD"
                     *         },
                     *         "maxPrice": {
                     *           "amount": 499.99,
                     *           "currencyCode": "USD"
                     *         }
                     *       }
                     *     }
                     */
                    "application/json": components["schemas"]["Bike"];
                };
            };
            /** @description Not Modified: the If-None-Match ETag is still current; no body. */
            304: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request failed validation. Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /**
                     * @description The first field that failed, in the order of its schema: its dotted path in the body as sent (`priceRange.minPrice.amount`), `query.` and the name of the query parameter (`query.q`), or the request header (`idempotency-key`). Absent when the body fails as a whole: malformed JSON, not an object, a media type or charset that cannot be read, or a value the database refuses.
                     * @example priceRange.minPrice.amount
                     */
                    "X-Invalid-Field"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description No such bike (a path id that is not a UUID names no bike). */
            404: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Not Found */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A precondition failed (If-Match names another state of the bike, or none; If-None-Match: * and the bike exists, or it names the state the bike is in). Nothing changed. */
            412: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Precondition Failed */
                    "text/plain": string;
                };
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description What the service needs is not answering (the database; for a token of the identity provider, its key set), and nothing was written; retry after Retry-After seconds. */
            503: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Service Unavailable */
                    "text/plain": string;
                };
            };
        };
    };
    replaceBike: {
        parameters: {
            query?: never;
            header?: {
                /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                "X-Request-Id"?: string;
                /** @description Write only if the bike is in this state: its strong ETag, from a read or a write (a list of them, or `*` for any state). Compared strongly: a weak tag never matches. Otherwise 412 and nothing changes. */
                "If-Match"?: string;
                /** @description On a read: the ETag of the copy you have; 304, with no body, while it is current. On a write: `*`, write only if there is no such bike (on PUT: create only); or tags, write only if the bike is in none of their states. Otherwise 412. */
                "If-None-Match"?: string;
            };
            path: {
                /**
                 * @description The bike id. A value that is not a UUID names no bike: 404.
                 * @example 3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41
                 */
                id: components["parameters"]["BikeId"];
            };
            cookie?: never;
        };
        /** @description Every field of a bike: those a create takes, plus a non-empty id and handle. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "id": "3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41",
                 *       "handle": "hybrid-bicycle-sentra",
                 *       "title": "Hybrid Bicycle Sentra",
                 *       "productType": "Hybrid",
                 *       "createdAt": "2024-03-01T10:00:00Z",
                 *       "description": "A comfortable hybrid for the city, with hydraulic disc brakes",
                 *       "vendor": "Sentra Cycles",
                 *       "availableForSale": true,
                 *       "totalInventory": 12,
                 *       "priceRange": {
                 *         "minPrice": {
                 *           "amount": 499.99,
                 *           "currencyCode": "USD"
                 *         },
                 *         "maxPrice": {
                 *           "amount": 499.99,
                 *           "currencyCode": "USD"
                 *         }
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["BikeReplacement"];
            };
        };
        responses: {
            /** @description The stored bike */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "id": "3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41",
                     *       "handle": "hybrid-bicycle-sentra",
                     *       "title": "Hybrid Bicycle Sentra",
                     *       "productType": "Hybrid",
                     *       "createdAt": "2024-03-01T10:00:00Z",
                     *       "description": "A comfortable hybrid for the city, with hydraulic disc brakes",
                     *       "vendor": "Sentra Cycles",
                     *       "availableForSale": true,
                     *       "totalInventory": 12,
                     *       "priceRange": {
                     *         "minPrice": {
                     *           "amount": 499.99,
                     *           "currencyCode": "USD"
                     *         },
                     *         "maxPrice": {
                     *           "amount": 499.99,
                     *           "currencyCode": "USD"
                     *         }
                     *       }
                     *     }
                     */
                    "application/json": components["schemas"]["Bike"];
                };
            };
            /** @description Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description No bearer token: the Authorization header is missing or has no second element. */
            401: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /**
                     * @description The challenge (RFC 6750): on a 401, `Bearer realm="bike-catalog"` (no token was sent); on a 403, why the token was refused, `error="invalid_token"` (expired, revoked, not signed by a key trusted here, malformed) or `error="insufficient_scope"` with the `scope` needed, each with an `error_description`.
                     * @example Bearer realm="bike-catalog", error="insufficient_scope", error_description="this operation needs the scope bikes:delete", scope="bikes:delete"
                     */
                    "WWW-Authenticate": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Unauthorized */
                    "text/plain": string;
                };
            };
            /** @description The token failed verification (tampered, another secret or key, expired, an algorithm or issuer not accepted, or living over 1800 s). */
            403: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    /**
                     * @description The challenge (RFC 6750): on a 401, `Bearer realm="bike-catalog"` (no token was sent); on a 403, why the token was refused, `error="invalid_token"` (expired, revoked, not signed by a key trusted here, malformed) or `error="insufficient_scope"` with the `scope` needed, each with an `error_description`.
                     * @example Bearer realm="bike-catalog", error="insufficient_scope", error_description="this operation needs the scope bikes:delete", scope="bikes:delete"
                     */
                    "WWW-Authenticate": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Forbidden */
                    "text/plain": string;
                };
            };
            /** @description Not a UUID, malformed JSON, or a body that fails validation. */
            404: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Not Found */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A precondition failed (If-Match names another state of the bike, or none; If-None-Match: * and the bike exists, or it names the state the bike is in). Nothing changed. */
            412: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Precondition Failed */
                    "text/plain": string;
                };
            };
            /** @description The body is larger than 1 MB; nothing is stored. Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Payload Too Large */
                    "text/plain": string;
                };
            };
            /** @description The body is in a Content-Encoding the service cannot decode (see Accept-Encoding); nothing is stored. */
            415: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description The content codings a request body may be sent in. */
                    "Accept-Encoding": "gzip, deflate, br";
                    [name: string]: unknown;
                };
                content: {
                    /** @example Unsupported Media Type */
                    "text/plain": string;
                };
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Over an abuse limit of this client (tokens or writes per minute, lists at once); retry after Retry-After seconds. */
            429: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Too Many Requests */
                    "text/plain": string;
                };
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description What the service needs is not answering (the database; for a token of the identity provider, its key set), and nothing was written; retry after Retry-After seconds. */
            503: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Service Unavailable */
                    "text/plain": string;
                };
            };
            /** @description The database stopped answering while the write ran (`Write-Outcome: unknown`): it may or may not have been applied. Read the bike named in Content-Location to know; retry a POST only with the same Idempotency-Key, other writes with If-Match. */
            504: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description `unknown`: the database stopped answering while the write ran, so it may or may not have been applied. Read the bike (its path is in `Content-Location`) to know; a retry is safe with the same Idempotency-Key (POST) or with If-Match (PUT, PATCH, DELETE). */
                    "Write-Outcome"?: "unknown";
                    /**
                     * @description The bike the write was for: on a create, the id it was being made under.
                     * @example /bikes/3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41
                     */
                    "Content-Location"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Gateway Timeout */
                    "text/plain": string;
                };
            };
        };
    };
    deleteBike: {
        parameters: {
            query?: never;
            header?: {
                /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                "X-Request-Id"?: string;
                /** @description Write only if the bike is in this state: its strong ETag, from a read or a write (a list of them, or `*` for any state). Compared strongly: a weak tag never matches. Otherwise 412 and nothing changes. */
                "If-Match"?: string;
                /** @description On a read: the ETag of the copy you have; 304, with no body, while it is current. On a write: `*`, write only if there is no such bike (on PUT: create only); or tags, write only if the bike is in none of their states. Otherwise 412. */
                "If-None-Match"?: string;
            };
            path: {
                /**
                 * @description The bike id. A value that is not a UUID names no bike: 404.
                 * @example 3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41
                 */
                id: components["parameters"]["BikeId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The id of the deleted bike */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "id": "3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41"
                     *     }
                     */
                    "application/json": components["schemas"]["DeletedBike"];
                };
            };
            /** @description The request failed validation. Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    /**
                     * @description The first field that failed, in the order of its schema: its dotted path in the body as sent (`priceRange.minPrice.amount`), `query.` and the name of the query parameter (`query.q`), or the request header (`idempotency-key`). Absent when the body fails as a whole: malformed JSON, not an object, a media type or charset that cannot be read, or a value the database refuses.
                     * @example priceRange.minPrice.amount
                     */
                    "X-Invalid-Field"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description No bearer token: the Authorization header is missing or has no second element. */
            401: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /**
                     * @description The challenge (RFC 6750): on a 401, `Bearer realm="bike-catalog"` (no token was sent); on a 403, why the token was refused, `error="invalid_token"` (expired, revoked, not signed by a key trusted here, malformed) or `error="insufficient_scope"` with the `scope` needed, each with an `error_description`.
                     * @example Bearer realm="bike-catalog", error="insufficient_scope", error_description="this operation needs the scope bikes:delete", scope="bikes:delete"
                     */
                    "WWW-Authenticate": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Unauthorized */
                    "text/plain": string;
                };
            };
            /** @description The token failed verification (tampered, another secret or key, expired, an algorithm or issuer not accepted, or living over 1800 s). */
            403: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    /**
                     * @description The challenge (RFC 6750): on a 401, `Bearer realm="bike-catalog"` (no token was sent); on a 403, why the token was refused, `error="invalid_token"` (expired, revoked, not signed by a key trusted here, malformed) or `error="insufficient_scope"` with the `scope` needed, each with an `error_description`.
                     * @example Bearer realm="bike-catalog", error="insufficient_scope", error_description="this operation needs the scope bikes:delete", scope="bikes:delete"
                     */
                    "WWW-Authenticate": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Forbidden */
                    "text/plain": string;
                };
            };
            /** @description No such bike (a path id that is not a UUID names no bike). */
            404: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Not Found */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A precondition failed (If-Match names another state of the bike, or none; If-None-Match: * and the bike exists, or it names the state the bike is in). Nothing changed. */
            412: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Precondition Failed */
                    "text/plain": string;
                };
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Over an abuse limit of this client (tokens or writes per minute, lists at once); retry after Retry-After seconds. */
            429: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Too Many Requests */
                    "text/plain": string;
                };
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description What the service needs is not answering (the database; for a token of the identity provider, its key set), and nothing was written; retry after Retry-After seconds. */
            503: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Service Unavailable */
                    "text/plain": string;
                };
            };
            /** @description The database stopped answering while the write ran (`Write-Outcome: unknown`): it may or may not have been applied. Read the bike named in Content-Location to know; retry a POST only with the same Idempotency-Key, other writes with If-Match. */
            504: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description `unknown`: the database stopped answering while the write ran, so it may or may not have been applied. Read the bike (its path is in `Content-Location`) to know; a retry is safe with the same Idempotency-Key (POST) or with If-Match (PUT, PATCH, DELETE). */
                    "Write-Outcome"?: "unknown";
                    /**
                     * @description The bike the write was for: on a create, the id it was being made under.
                     * @example /bikes/3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41
                     */
                    "Content-Location"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Gateway Timeout */
                    "text/plain": string;
                };
            };
        };
    };
    updateBike: {
        parameters: {
            query?: never;
            header?: {
                /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                "X-Request-Id"?: string;
                /** @description Write only if the bike is in this state: its strong ETag, from a read or a write (a list of them, or `*` for any state). Compared strongly: a weak tag never matches. Otherwise 412 and nothing changes. */
                "If-Match"?: string;
                /** @description On a read: the ETag of the copy you have; 304, with no body, while it is current. On a write: `*`, write only if there is no such bike (on PUT: create only); or tags, write only if the bike is in none of their states. Otherwise 412. */
                "If-None-Match"?: string;
            };
            path: {
                /**
                 * @description The bike id. A value that is not a UUID names no bike: 404.
                 * @example 3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41
                 */
                id: components["parameters"]["BikeId"];
            };
            cookie?: never;
        };
        /** @description Any subset of the fields, each valid as on create. */
        requestBody?: {
            content: {
                /**
                 * @example {
                 *       "totalInventory": 7,
                 *       "availableForSale": false
                 *     }
                 */
                "application/json": components["schemas"]["BikePatch"];
                "application/merge-patch+json": components["schemas"]["BikePatch"];
            };
        };
        responses: {
            /** @description The bike with the fields applied */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "id": "3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41",
                     *       "handle": "hybrid-bicycle-sentra",
                     *       "title": "Hybrid Bicycle Sentra",
                     *       "productType": "Hybrid",
                     *       "createdAt": "2024-03-01T10:00:00Z",
                     *       "description": "A comfortable hybrid for the city, with hydraulic disc brakes",
                     *       "vendor": "Sentra Cycles",
                     *       "availableForSale": false,
                     *       "totalInventory": 7,
                     *       "priceRange": {
                     *         "minPrice": {
                     *           "amount": 499.99,
                     *           "currencyCode": "USD"
                     *         },
                     *         "maxPrice": {
                     *           "amount": 499.99,
                     *           "currencyCode": "USD"
                     *         }
                     *       }
                     *     }
                     */
                    "application/json": components["schemas"]["Bike"];
                };
            };
            /** @description A field has the wrong type, or the JSON is malformed. Nothing changes. Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    /**
                     * @description The first field that failed, in the order of its schema: its dotted path in the body as sent (`priceRange.minPrice.amount`), `query.` and the name of the query parameter (`query.q`), or the request header (`idempotency-key`). Absent when the body fails as a whole: malformed JSON, not an object, a media type or charset that cannot be read, or a value the database refuses.
                     * @example priceRange.minPrice.amount
                     */
                    "X-Invalid-Field"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description No bearer token: the Authorization header is missing or has no second element. */
            401: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /**
                     * @description The challenge (RFC 6750): on a 401, `Bearer realm="bike-catalog"` (no token was sent); on a 403, why the token was refused, `error="invalid_token"` (expired, revoked, not signed by a key trusted here, malformed) or `error="insufficient_scope"` with the `scope` needed, each with an `error_description`.
                     * @example Bearer realm="bike-catalog", error="insufficient_scope", error_description="this operation needs the scope bikes:delete", scope="bikes:delete"
                     */
                    "WWW-Authenticate": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Unauthorized */
                    "text/plain": string;
                };
            };
            /** @description The token failed verification (tampered, another secret or key, expired, an algorithm or issuer not accepted, or living over 1800 s). */
            403: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    /**
                     * @description The challenge (RFC 6750): on a 401, `Bearer realm="bike-catalog"` (no token was sent); on a 403, why the token was refused, `error="invalid_token"` (expired, revoked, not signed by a key trusted here, malformed) or `error="insufficient_scope"` with the `scope` needed, each with an `error_description`.
                     * @example Bearer realm="bike-catalog", error="insufficient_scope", error_description="this operation needs the scope bikes:delete", scope="bikes:delete"
                     */
                    "WWW-Authenticate": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Forbidden */
                    "text/plain": string;
                };
            };
            /** @description No such bike (a path id that is not a UUID names no bike). */
            404: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Not Found */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A precondition failed (If-Match names another state of the bike, or none; If-None-Match: * and the bike exists, or it names the state the bike is in). Nothing changed. */
            412: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Precondition Failed */
                    "text/plain": string;
                };
            };
            /** @description The body is larger than 1 MB; nothing is stored. Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Payload Too Large */
                    "text/plain": string;
                };
            };
            /** @description The body is in a Content-Encoding the service cannot decode (see Accept-Encoding); nothing is stored. */
            415: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description The content codings a request body may be sent in. */
                    "Accept-Encoding": "gzip, deflate, br";
                    [name: string]: unknown;
                };
                content: {
                    /** @example Unsupported Media Type */
                    "text/plain": string;
                };
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Over an abuse limit of this client (tokens or writes per minute, lists at once); retry after Retry-After seconds. */
            429: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Too Many Requests */
                    "text/plain": string;
                };
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description What the service needs is not answering (the database; for a token of the identity provider, its key set), and nothing was written; retry after Retry-After seconds. */
            503: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Service Unavailable */
                    "text/plain": string;
                };
            };
            /** @description The database stopped answering while the write ran (`Write-Outcome: unknown`): it may or may not have been applied. Read the bike named in Content-Location to know; retry a POST only with the same Idempotency-Key, other writes with If-Match. */
            504: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description `unknown`: the database stopped answering while the write ran, so it may or may not have been applied. Read the bike (its path is in `Content-Location`) to know; a retry is safe with the same Idempotency-Key (POST) or with If-Match (PUT, PATCH, DELETE). */
                    "Write-Outcome"?: "unknown";
                    /**
                     * @description The bike the write was for: on a create, the id it was being made under.
                     * @example /bikes/3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41
                     */
                    "Content-Location"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Gateway Timeout */
                    "text/plain": string;
                };
            };
        };
    };
    getBikeByHandle: {
        parameters: {
            query?: never;
            header?: {
                /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                "X-Request-Id"?: string;
                /**
                 * @description A list; an element `primary` reads from the primary database, to see your own writes at once. Other values are ignored.
                 * @example primary
                 */
                "X-Read-From"?: string;
                /** @description On a read: the ETag of the copy you have; 304, with no body, while it is current. On a write: `*`, write only if there is no such bike (on PUT: create only); or tags, write only if the bike is in none of their states. Otherwise 412. */
                "If-None-Match"?: string;
                /** @description Write only if the bike is in this state: its strong ETag, from a read or a write (a list of them, or `*` for any state). Compared strongly: a weak tag never matches. Otherwise 412 and nothing changes. */
                "If-Match"?: string;
            };
            path: {
                /**
                 * @description The handle: the title with spaces turned into dashes, lowercased.
                 * @example hybrid-bicycle-sentra
                 */
                handle: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The bike */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    /** @description Only while the primary cannot be reached and a replica answers: `as-of=<ISO time of the newest commit the replica has>; age=<seconds since>`, or `unknown`. The answer may miss later writes. */
                    "X-Stale"?: string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "id": "3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41",
                     *       "handle": "hybrid-bicycle-sentra",
                     *       "title": "Hybrid Bicycle Sentra",
                     *       "productType": "Hybrid",
                     *       "createdAt": "2024-03-01T10:00:00Z",
                     *       "description": "A comfortable hybrid for the city, with hydraulic disc brakes",
                     *       "vendor": "Sentra Cycles",
                     *       "availableForSale": true,
                     *       "totalInventory": 12,
                     *       "priceRange": {
                     *         "minPrice": {
                     *           "amount": 499.99,
                     *           "currencyCode": "USD"
                     *         },
                     *         "maxPrice": {
                     *           "amount": 499.99,
                     *           "currencyCode": "USD"
                     *         }
                     *       }
                     *     }
                     */
                    "application/json": components["schemas"]["Bike"];
                };
            };
            /** @description Not Modified: the If-None-Match ETag is still current; no body. */
            304: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request failed validation. Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /**
                     * @description The first field that failed, in the order of its schema: its dotted path in the body as sent (`priceRange.minPrice.amount`), `query.` and the name of the query parameter (`query.q`), or the request header (`idempotency-key`). Absent when the body fails as a whole: malformed JSON, not an object, a media type or charset that cannot be read, or a value the database refuses.
                     * @example priceRange.minPrice.amount
                     */
                    "X-Invalid-Field"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description No such bike (a path id that is not a UUID names no bike). */
            404: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Not Found */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A precondition failed (If-Match names another state of the bike, or none; If-None-Match: * and the bike exists, or it names the state the bike is in). Nothing changed. */
            412: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Precondition Failed */
                    "text/plain": string;
                };
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description What the service needs is not answering (the database; for a token of the identity provider, its key set), and nothing was written; retry after Retry-After seconds. */
            503: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Service Unavailable */
                    "text/plain": string;
                };
            };
        };
    };
    searchBikesByTitle: {
        parameters: {
            query?: {
                /**
                 * @description The text to look for. Missing or empty: every bike. Given twice, or with U+0000: 400.
                 * @example Hybrid
                 */
                query?: string;
            };
            header?: {
                /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                "X-Request-Id"?: string;
                /**
                 * @description A list; an element `primary` reads from the primary database, to see your own writes at once. Other values are ignored.
                 * @example primary
                 */
                "X-Read-From"?: string;
                /** @description On a read: the ETag of the copy you have; 304, with no body, while it is current. On a write: `*`, write only if there is no such bike (on PUT: create only); or tags, write only if the bike is in none of their states. Otherwise 412. */
                "If-None-Match"?: string;
                /** @description Write only if the bike is in this state: its strong ETag, from a read or a write (a list of them, or `*` for any state). Compared strongly: a weak tag never matches. Otherwise 412 and nothing changes. */
                "If-Match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The matching bikes */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    /** @description Only while the primary cannot be reached and a replica answers: `as-of=<ISO time of the newest commit the replica has>; age=<seconds since>`, or `unknown`. The answer may miss later writes. */
                    "X-Stale"?: string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    /** @description The point of the change feed (GET /bikes/changes) this answer is consistent with: follow the feed with it as `since` and you miss and repeat nothing. Opaque. */
                    "Catalog-Cursor"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example [
                     *       {
                     *         "id": "3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41",
                     *         "handle": "hybrid-bicycle-sentra",
                     *         "title": "Hybrid Bicycle Sentra",
                     *         "productType": "Hybrid",
                     *         "createdAt": "2024-03-01T10:00:00Z",
                     *         "description": "A comfortable hybrid for the city, with hydraulic disc brakes",
                     *         "vendor": "Sentra Cycles",
                     *         "availableForSale": true,
                     *         "totalInventory": 12,
                     *         "priceRange": {
                     *           "minPrice": {
                     *             "amount": 499.99,
                     *             "currencyCode": "USD"
                     *           },
                     *           "maxPrice": {
                     *             "amount": 499.99,
                     *             "currencyCode": "USD"
                     *           }
                     *         }
                     *       }
                     *     ]
                     */
                    "application/json": components["schemas"]["Bike"][];
                };
            };
            /** @description Not Modified: the If-None-Match ETag is still current; no body. */
            304: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A failed search: `query` given more than once, or containing U+0000. Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /**
                     * @description The first field that failed, in the order of its schema: its dotted path in the body as sent (`priceRange.minPrice.amount`), `query.` and the name of the query parameter (`query.q`), or the request header (`idempotency-key`). Absent when the body fails as a whole: malformed JSON, not an object, a media type or charset that cannot be read, or a value the database refuses.
                     * @example priceRange.minPrice.amount
                     */
                    "X-Invalid-Field"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A precondition failed (If-Match names another state of the bike, or none; If-None-Match: * and the bike exists, or it names the state the bike is in). Nothing changed. */
            412: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Precondition Failed */
                    "text/plain": string;
                };
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Over an abuse limit of this client (tokens or writes per minute, lists at once); retry after Retry-After seconds. */
            429: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Too Many Requests */
                    "text/plain": string;
                };
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description What the service needs is not answering (the database; for a token of the identity provider, its key set), and nothing was written; retry after Retry-After seconds. */
            503: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Service Unavailable */
                    "text/plain": string;
                };
            };
        };
    };
    createBike: {
        parameters: {
            query?: never;
            header?: {
                /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                "X-Request-Id"?: string;
                /**
                 * @description Your name for this create, to retry it safely (1 to 255 visible ASCII characters, no comma; make it unguessable: a UUID v4 per create). Sent again with the same fields, it answers the first 200 again (with `Idempotent-Replayed: true`) and creates nothing; with other fields, 422; while the first request is still running, 409. Whose keys it is among, and for how long: docs/reference/caching-and-conditions.md#idempotency-keys.
                 * @example 8e03978e-40d5-43e8-bc93-6894a57f9324
                 */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        /** @description Every field of a bike but id and handle, which the server makes. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "title": "Hybrid Bicycle Sentra",
                 *       "productType": "Hybrid",
                 *       "createdAt": "2024-03-01T10:00:00Z",
                 *       "description": "A comfortable hybrid for the city, with hydraulic disc brakes",
                 *       "vendor": "Sentra Cycles",
                 *       "availableForSale": true,
                 *       "totalInventory": 12,
                 *       "priceRange": {
                 *         "minPrice": {
                 *           "amount": 499.99,
                 *           "currencyCode": "USD"
                 *         },
                 *         "maxPrice": {
                 *           "amount": 499.99,
                 *           "currencyCode": "USD"
                 *         }
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["NewBike"];
            };
        };
        responses: {
            /** @description The created bike */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a list. A compressed answer's strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state. */
                    ETag?: string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description `true` on an answer given again for an Idempotency-Key seen before (nothing was created). */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "id": "3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41",
                     *       "handle": "hybrid-bicycle-sentra",
                     *       "title": "Hybrid Bicycle Sentra",
                     *       "productType": "Hybrid",
                     *       "createdAt": "2024-03-01T10:00:00Z",
                     *       "description": "A comfortable hybrid for the city, with hydraulic disc brakes",
                     *       "vendor": "Sentra Cycles",
                     *       "availableForSale": true,
                     *       "totalInventory": 12,
                     *       "priceRange": {
                     *         "minPrice": {
                     *           "amount": 499.99,
                     *           "currencyCode": "USD"
                     *         },
                     *         "maxPrice": {
                     *           "amount": 499.99,
                     *           "currencyCode": "USD"
                     *         }
                     *       }
                     *     }
                     */
                    "application/json": components["schemas"]["Bike"];
                };
            };
            /** @description No body, malformed JSON, a body that fails validation, or an Idempotency-Key that is not one. Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    /**
                     * @description The first field that failed, in the order of its schema: its dotted path in the body as sent (`priceRange.minPrice.amount`), `query.` and the name of the query parameter (`query.q`), or the request header (`idempotency-key`). Absent when the body fails as a whole: malformed JSON, not an object, a media type or charset that cannot be read, or a value the database refuses.
                     * @example priceRange.minPrice.amount
                     */
                    "X-Invalid-Field"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description No bearer token: the Authorization header is missing or has no second element. */
            401: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /**
                     * @description The challenge (RFC 6750): on a 401, `Bearer realm="bike-catalog"` (no token was sent); on a 403, why the token was refused, `error="invalid_token"` (expired, revoked, not signed by a key trusted here, malformed) or `error="insufficient_scope"` with the `scope` needed, each with an `error_description`.
                     * @example Bearer realm="bike-catalog", error="insufficient_scope", error_description="this operation needs the scope bikes:delete", scope="bikes:delete"
                     */
                    "WWW-Authenticate": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Unauthorized */
                    "text/plain": string;
                };
            };
            /** @description The token failed verification (tampered, another secret or key, expired, an algorithm or issuer not accepted, or living over 1800 s). */
            403: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    /**
                     * @description The challenge (RFC 6750): on a 401, `Bearer realm="bike-catalog"` (no token was sent); on a 403, why the token was refused, `error="invalid_token"` (expired, revoked, not signed by a key trusted here, malformed) or `error="insufficient_scope"` with the `scope` needed, each with an `error_description`.
                     * @example Bearer realm="bike-catalog", error="insufficient_scope", error_description="this operation needs the scope bikes:delete", scope="bikes:delete"
                     */
                    "WWW-Authenticate": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Forbidden */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A request with this Idempotency-Key is still running; retry later. */
            409: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Conflict */
                    "text/plain": string;
                };
            };
            /** @description The body is larger than 1 MB; nothing is stored. Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Payload Too Large */
                    "text/plain": string;
                };
            };
            /** @description The body is in a Content-Encoding the service cannot decode (see Accept-Encoding); nothing is stored. */
            415: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description The content codings a request body may be sent in. */
                    "Accept-Encoding": "gzip, deflate, br";
                    [name: string]: unknown;
                };
                content: {
                    /** @example Unsupported Media Type */
                    "text/plain": string;
                };
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description This Idempotency-Key was used with other fields. */
            422: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Unprocessable Entity */
                    "text/plain": string;
                };
            };
            /** @description Over an abuse limit of this client (tokens or writes per minute, lists at once); retry after Retry-After seconds. */
            429: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Too Many Requests */
                    "text/plain": string;
                };
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description What the service needs is not answering (the database; for a token of the identity provider, its key set), and nothing was written; retry after Retry-After seconds. */
            503: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Service Unavailable */
                    "text/plain": string;
                };
            };
            /** @description The database stopped answering while the write ran (`Write-Outcome: unknown`): it may or may not have been applied. Read the bike named in Content-Location to know; retry a POST only with the same Idempotency-Key, other writes with If-Match. */
            504: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description `unknown`: the database stopped answering while the write ran, so it may or may not have been applied. Read the bike (its path is in `Content-Location`) to know; a retry is safe with the same Idempotency-Key (POST) or with If-Match (PUT, PATCH, DELETE). */
                    "Write-Outcome"?: "unknown";
                    /**
                     * @description The bike the write was for: on a create, the id it was being made under.
                     * @example /bikes/3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41
                     */
                    "Content-Location"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Gateway Timeout */
                    "text/plain": string;
                };
            };
        };
    };
    issueToken: {
        parameters: {
            query?: never;
            header?: {
                /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        /** @description Who the token is for (ignored with an API key: the token is the key's). */
        requestBody?: {
            content: {
                /**
                 * @example {
                 *       "username": "alice"
                 *     }
                 */
                "application/json": components["schemas"]["TokenRequest"];
                "application/x-www-form-urlencoded": components["schemas"]["TokenRequest"];
            };
        };
        responses: {
            /** @description A token */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "token": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ1c2VybmFtZSI6ImFsaWNlIiwiaWF0IjoxNzY0MDAwMDAwLCJleHAiOjE3NjQwMDE4MDAsImp0aSI6IjhKMW5CcTN2UzBtWWwybzRjWjV5U2cifQ.c2lnbmF0dXJlLW9mLWFuLWV4YW1wbGUtdG9rZW4"
                     *     }
                     */
                    "application/json": components["schemas"]["Token"];
                };
            };
            /** @description `username` is present but not a string, or the JSON is malformed. Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    /**
                     * @description The first field that failed, in the order of its schema: its dotted path in the body as sent (`priceRange.minPrice.amount`), `query.` and the name of the query parameter (`query.q`), or the request header (`idempotency-key`). Absent when the body fails as a whole: malformed JSON, not an object, a media type or charset that cannot be read, or a value the database refuses.
                     * @example priceRange.minPrice.amount
                     */
                    "X-Invalid-Field"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description Token issuance is closed (`TOKEN_ISSUANCE=closed`) and no API key was sent: no token is given here, to anyone without one; or the API key sent is not known, was revoked or has expired (`error="invalid_token"`). */
            403: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /**
                     * @description The challenge (RFC 6750): on a 401, `Bearer realm="bike-catalog"` (no token was sent); on a 403, why the token was refused, `error="invalid_token"` (expired, revoked, not signed by a key trusted here, malformed) or `error="insufficient_scope"` with the `scope` needed, each with an `error_description`.
                     * @example Bearer realm="bike-catalog", error="insufficient_scope", error_description="this operation needs the scope bikes:delete", scope="bikes:delete"
                     */
                    "WWW-Authenticate": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Forbidden */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The body is larger than 1 MB; nothing is stored. Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id"?: string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy"?: string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Payload Too Large */
                    "text/plain": string;
                };
            };
            /** @description The body is in a Content-Encoding the service cannot decode (see Accept-Encoding); nothing is stored. */
            415: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description The content codings a request body may be sent in. */
                    "Accept-Encoding": "gzip, deflate, br";
                    [name: string]: unknown;
                };
                content: {
                    /** @example Unsupported Media Type */
                    "text/plain": string;
                };
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Over an abuse limit of this client (tokens or writes per minute, lists at once); retry after Retry-After seconds. */
            429: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Too Many Requests */
                    "text/plain": string;
                };
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description What the service needs is not answering (the database; for a token of the identity provider, its key set), and nothing was written; retry after Retry-After seconds. */
            503: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description Seconds to wait before trying again. */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Service Unavailable */
                    "text/plain": string;
                };
            };
            /** @description The database stopped answering while the write ran (`Write-Outcome: unknown`): it may or may not have been applied. Read the bike named in Content-Location to know; retry a POST only with the same Idempotency-Key, other writes with If-Match. */
            504: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client). */
                    "RateLimit-Policy": string;
                    /** @description What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`. */
                    RateLimit: string;
                    /** @description `unknown`: the database stopped answering while the write ran, so it may or may not have been applied. Read the bike (its path is in `Content-Location`) to know; a retry is safe with the same Idempotency-Key (POST) or with If-Match (PUT, PATCH, DELETE). */
                    "Write-Outcome"?: "unknown";
                    /**
                     * @description The bike the write was for: on a create, the id it was being made under.
                     * @example /bikes/3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41
                     */
                    "Content-Location"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example Gateway Timeout */
                    "text/plain": string;
                };
            };
        };
    };
    liveness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description `OK` */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    readiness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description `OK` */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Not ready, and why. */
            503: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The metrics. */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description METRICS_PORT serves them on a port of their own. */
            404: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    openApiDocument: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The OpenAPI document. */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, never>;
                };
            };
            /** @description Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    docsPage: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The page. */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description What the page may load and run: only its own files. */
                    "Content-Security-Policy"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
            /** @description Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    docsPageScript: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The script. */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    [name: string]: unknown;
                };
                content: {
                    "text/javascript": string;
                };
            };
            /** @description Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    docsPageAsset: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                asset: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The file, in its own media type (text/css, text/javascript, image/png). */
            200: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    /** @description `no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none. */
                    "Cache-Control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "*/*": string;
                };
            };
            /** @description Before any route: a request that cannot be read safely (two Host lines, a Transfer-Encoding that does not end in chunked, a request line or header node cannot parse); the connection closes. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /** @example Bad Request */
                    "text/plain": string;
                };
            };
            /** @description No such file of the page. */
            404: {
                headers: {
                    /** @description Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made. */
                    "X-Request-Id": string;
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The request line and headers took over 10 s, or the whole request over 30 s; the connection closes. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Before any route: chunk extensions over the parser's limit; the connection closes. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An Expect other than `100-continue`: it cannot be met. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request headers are larger than 256 KB; the connection closes. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
}

/** The service's types, as its OpenAPI document declares them (schema.ts, generated). */
type Schemas = components['schemas'];
type Bike = Schemas['Bike'];
/** A bike's `priceRange`: its `minPrice` and `maxPrice`. */
type PriceRange = Schemas['PriceRange'];
/** An `amount` and its `currencyCode`. */
type Money = Schemas['Money'];
/** The fields a create sends: all of a bike's but `id` and `handle`, which the service makes. */
type NewBike = Schemas['NewBike'];
/** Any of a bike's fields, for an update. */
type BikePatch = Schemas['BikePatch'];
/** A change of the feed, told apart by `type`: the document's `Change` carries `bike` on an upsert only. */
type Change = Omit<Schemas['Change'], 'type' | 'bike'> & ({
    type: 'upsert';
    bike: Bike;
} | {
    type: 'delete';
    bike?: undefined;
});
/**
 * What `follow` hands over: the whole catalog (`list`, first, and again after the feed could not
 * go on: replace what you hold with it), then each change after it, in order. `cursor` is where
 * to resume from (`follow(onChange, { from: cursor })`).
 */
type CatalogEvent = Change | {
    type: 'list';
    bikes: Bike[];
    cursor: string;
};
type BrowseQuery = NonNullable<operations['browseBikes']['parameters']['query']>;
/** A parameter that may be repeated (any of its values) is given as one value or as several. */
type OneOrMore<Query> = {
    [Name in keyof Query]: NonNullable<Query[Name]> extends (infer Value)[] ? Value | Value[] : Query[Name];
};
type FilterQuery = OneOrMore<BrowseQuery>;
type PriceFilters = 'currency' | 'minPrice' | 'maxPrice';
/**
 * GET /bikes's filters (`vendor: 'Trek'` or `vendor: ['Trek', 'Giant']`). A price range is in one
 * currency: `minPrice` or `maxPrice` only with `currency` (the service refuses them without it,
 * 400), which the compiler says here.
 */
type Filters = Omit<FilterQuery, 'sort' | 'limit' | 'cursor' | PriceFilters> & ({
    currency?: undefined;
    minPrice?: undefined;
    maxPrice?: undefined;
} | (Required<Pick<FilterQuery, 'currency'>> & Pick<FilterQuery, 'minPrice' | 'maxPrice'>));
/** GET /bikes's orders, each reversed with a leading `-`. */
type Sort = NonNullable<BrowseQuery['sort']>;
/** GET /bikes/facets's answer: the total, each facet's values and counts, the price ranges. */
type Facets = operations['bikeFacets']['responses'][200]['content']['application/json'];
/** A facet GET /bikes/facets counts. */
type FacetName = keyof Facets['facets'];

/** An EventSource as the client uses one: the browser's, or one a Node.js program gives (undici's). */
interface EventSourceLike {
    readonly readyState: number;
    close(): void;
    addEventListener(type: 'message', listener: (event: {
        data: string;
    }) => void): void;
    addEventListener(type: 'error', listener: () => void): void;
}
type EventSourceConstructor = new (url: string) => EventSourceLike;

interface CallOptions {
    /** Stops the call (and its retries): it rejects with the signal's reason. */
    signal?: AbortSignal;
}

interface FollowOptions extends CallOptions {
    /** Where to go on from: the `cursor` of the last event handled. Without it, the catalog is listed first. */
    from?: string;
    /** How long to wait between pages of changes once caught up, where there is no EventSource: 1 s. */
    pollMs?: number;
    /** Told each time where the follower stands changes (FollowStatus). */
    onStatus?: (status: FollowStatus) => void;
}
/**
 * Where a follower stands: `offline`, the service does not answer (or answers 5xx) and is asked
 * again; `catching-up`, it answers, and what came meanwhile is being handed over; `caught-up`,
 * every change up to the last the service had when asked is handed over, and each new one
 * follows as it comes.
 */
type FollowStatus = 'offline' | 'catching-up' | 'caught-up';

interface CatalogClientOptions {
    /** The service's address: `https://catalog.example.com`. */
    baseUrl: string;
    /**
     * Where write tokens come from: a token, or a function that gives one (where the service gives
     * none to anyone: a token your operator issued, or your identity provider's). Without it, the
     * client asks POST /api/user, and again before the token expires.
     */
    token?: TokenSource;
    /**
     * An API key your operator issued (`bk_live_...`, docs/reference/callers.md#api-keys): the client trades
     * it for a token at POST /api/user, and again before each token expires. Not with `token`.
     */
    apiKey?: string;
    /** The username POST /api/user writes into the tokens it gives (the scope of your Idempotency-Keys). */
    username?: string;
    /** Send write bodies gzip-compressed. */
    compress?: boolean;
    /** Answers (and lost connections) a call takes before it gives up with a ServerError: 10. */
    attempts?: number;
    /** The longest wait for one answer, in milliseconds, before it counts as a lost connection: 60,000. */
    timeoutMs?: number;
    /** The fetch to send with: the platform's by default. */
    fetch?: typeof fetch;
    /**
     * The EventSource `follow` streams the changes with: the platform's where it has one (browsers).
     * `null`, or none: `follow` reads pages of changes instead.
     */
    EventSource?: EventSourceConstructor | null;
}
interface CatalogClient {
    /** The bike; the client remembers its state (ETag) for `update`. */
    get(id: string, options?: CallOptions): Promise<Bike>;
    /** Creates the bike once, whatever the retries take (one Idempotency-Key for them all). */
    create(bike: NewBike, options?: CallOptions & {
        idempotencyKey?: string;
    }): Promise<Bike>;
    /** Applies the changes to the bike as last read (If-Match), or throws ConflictError with the bike as it is now. */
    update(bike: string | Bike, changes: BikePatch, options?: CallOptions): Promise<Bike>;
    /** Deletes the bike; one this client read that changed since is kept (ConflictError). */
    delete(id: string, options?: CallOptions): Promise<void>;
    /** The bikes that pass the filters, in the order `sort` names, a page at a time. */
    pages(filters?: Filters, sort?: Sort, options?: CallOptions & {
        limit?: number;
    }): AsyncGenerator<Bike[], void, undefined>;
    /** For the bikes that pass the filters: the total, each facet's values with counts, the price ranges. */
    facets(filters?: Filters, options?: CallOptions & {
        facets?: FacetName[];
    }): Promise<Facets>;
    /** The whole catalog, then each change to it, once and in order, until `signal` aborts. */
    follow(onChange: (event: CatalogEvent) => unknown, options?: FollowOptions): Promise<void>;
    /**
     * The typed openapi-fetch client, for any other call (a replace, a search): its writes are
     * signed with the client's token; no other rule is applied, and answers come as the service gives them.
     */
    api: Client<paths>;
}
/** A client of the bike catalog service at `baseUrl`, with the rules of docs/clients.md built in. */
declare function createCatalogClient(options: CatalogClientOptions): CatalogClient;

/** Every error the client throws for an answer of the service, or for the lack of one. */
declare class CatalogError extends Error {
    /** The answer's status; undefined when no answer came (the connection failed). */
    readonly status?: number | undefined;
    name: string;
    constructor(message: string, 
    /** The answer's status; undefined when no answer came (the connection failed). */
    status?: number | undefined, options?: {
        cause?: unknown;
    });
}
/** A 4xx: the request was refused, and nothing was written. */
declare class RequestError extends CatalogError {
    /** The field the service refused (`X-Invalid-Field`: `priceRange.minPrice.amount`), when it named one. */
    readonly invalidField?: string | undefined;
    name: string;
    constructor(message: string, status: number, 
    /** The field the service refused (`X-Invalid-Field`: `priceRange.minPrice.amount`), when it named one. */
    invalidField?: string | undefined);
}
/** A 404: no such bike. */
declare class NotFoundError extends RequestError {
    name: string;
}
/**
 * A write refused because the bike changed since it was read (412), or found changed before it
 * was sent: nothing was written. `current` is the bike as it is now; the client remembers its
 * state, so `update(current.id, changes)` again applies the changes to it.
 */
declare class ConflictError extends CatalogError {
    readonly current: Bike;
    name: string;
    constructor(current: Bike);
}
/**
 * The service did not settle a request within the client's attempts: it answered 5xx (or 429,
 * 409), or did not answer. `written` says what became of a write: `nothing` (every answer said
 * so, 503), or `unknown` (an answer said `Write-Outcome: unknown`, or a connection was lost
 * after the request went). A create's `idempotencyKey` learns its outcome later: `create(bike,
 * { idempotencyKey })` within 24 hours answers the bike it made, or makes it.
 */
declare class ServerError extends CatalogError {
    readonly written: 'nothing' | 'unknown';
    readonly idempotencyKey?: string | undefined;
    name: string;
    constructor(message: string, status: number | undefined, written: 'nothing' | 'unknown', idempotencyKey?: string | undefined, options?: {
        cause?: unknown;
    });
}
/**
 * A request stopped on this side, which asking again cannot change: the client refused to send it
 * (a token that an `Authorization` header cannot carry), or the browser withheld the service's
 * answer from this page (CORS: the service does not allow the page's origin). Nothing was written.
 */
declare class BlockedError extends CatalogError {
    name: string;
    readonly written = "nothing";
}
/** A 401: the write carried no token (docs/reference/callers.md#refusals). */
declare class TokenMissingError extends RequestError {
    name: string;
}
/**
 * A 403 `invalid_token`: the token (or the API key traded for it) was refused: expired, revoked, not
 * signed by a key the service trusts, or malformed. `description` says which, as the service put it.
 */
declare class InvalidTokenError extends RequestError {
    readonly description: string;
    name: string;
    constructor(message: string, description: string);
}
/** A 403 `insufficient_scope`: the token may not do this; `scope` is the one it needs (`bikes:delete`). */
declare class InsufficientScopeError extends RequestError {
    readonly scope: string;
    name: string;
    constructor(message: string, scope: string);
}
/** A 403 of POST /api/user without a key: the operator closed token issuance; give the client a `token` or an `apiKey`. */
declare class IssuanceClosedError extends RequestError {
    name: string;
}

/**
 * A receiver's check of a webhook (docs/webhooks.md), as the Standard Webhooks
 * specification says and its libraries do it: the HMAC-SHA256 of `id.timestamp.body` under the
 * subscription's secret (`whsec_...`) must be one of the `v1,` signatures of `webhook-signature`
 * (several, space-separated, while a rotated secret still signs), and `webhook-timestamp` within
 * five minutes of now. Over WebCrypto, so the same in browsers and Node.js; test/client checks it
 * against the standardwebhooks library.
 */
/** A webhook's body: a change of the catalog, with the feed's cursor after it. */
type WebhookEvent = {
    type: 'bike.created' | 'bike.updated';
    timestamp: string;
    data: Bike;
    cursor: string;
} | {
    type: 'bike.deleted';
    timestamp: string;
    data: {
        id: string;
    };
    cursor: string;
};
/** The message is not one the secret signed, or is too old (or too far ahead) to be taken. */
declare class WebhookVerificationError extends Error {
    name: string;
}
type HeaderSource = Headers | Record<string, string | string[] | undefined>;
/**
 * The event, once `body` (the request's bytes, exactly as they came) is proved to be signed with
 * `secret`; WebhookVerificationError otherwise. Deduplicate by `webhook-id`, order by `cursor`.
 */
declare function verifyWebhook(secret: string, headers: HeaderSource, body: string | Uint8Array, now?: Date): Promise<WebhookEvent>;

export { BlockedError, CatalogError, ConflictError, InsufficientScopeError, InvalidTokenError, IssuanceClosedError, NotFoundError, RequestError, ServerError, TokenMissingError, WebhookVerificationError, createCatalogClient, verifyWebhook };
export type { Bike, BikePatch, CallOptions, CatalogClient, CatalogClientOptions, CatalogEvent, Change, EventSourceConstructor, EventSourceLike, FacetName, Facets, Filters, FollowOptions, FollowStatus, Money, NewBike, PriceRange, Sort, TokenSource, WebhookEvent, components, operations, paths };
