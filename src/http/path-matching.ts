import Router from '@koa/router';

/**
 * A router, as every router of the service is made (docs/reference/http.md#path-matching): a path
 * matches only as written, case included, so /bikes/ALL is not the list /bikes/all but an id,
 * as the OpenAPI document reads; a trailing slash stays optional (the router's default).
 */
export function newRouter(): Router {
  return new Router({ sensitive: true });
}

/**
 * A path that is not valid percent-encoding (/bikes/by-handle/%ZZ) names nothing: 404
 * (docs/reference/reads-and-writes.md#ids-and-path-segments).
 */
export function isWellFormedPath(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}
