import fs from 'node:fs';
import path from 'node:path';
import type Router from '@koa/router';
import { HttpError } from './errors';
import type { PlainRoute } from './plain-route';
import { newRouter } from './path-matching';

/**
 * GET /openapi.json, and GET /docs: Swagger UI rendering it, served from the swagger-ui-dist
 * package in node_modules (no CDN, so the page works offline and behind a firewall).
 */

const SWAGGER_UI_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));

/** The only files of the package the page needs; nothing else under /docs/ is served. */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Bike catalog API</title>
    <link rel="stylesheet" href="/docs/swagger-ui.css" />
    <link rel="icon" type="image/png" href="/docs/favicon-32x32.png" sizes="32x32" />
    <link rel="icon" type="image/png" href="/docs/favicon-16x16.png" sizes="16x16" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="/docs/swagger-ui-bundle.js"></script>
    <script src="/docs/swagger-initializer.js"></script>
  </body>
</html>
`;

// A file rather than an inline script, so the page runs under a CSP without 'unsafe-inline' scripts.
// validatorUrl null: Swagger UI would otherwise send the document to validator.swagger.io.
const INITIALIZER = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;

// Swagger UI sets inline styles and shows data: images; everything else comes from here.
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** The page that shows the API description (the start-up line names it). */
export const DOCS_PAGE = '/docs';

/** The document's description of the routes of this file (openapi.ts). */
export const DOCS_ROUTES: PlainRoute[] = [
  {
    path: '/openapi.json',
    operationId: 'openApiDocument',
    summary: 'This document',
    responses: { 200: { description: 'The OpenAPI document.', types: ['application/json'] } },
  },
  {
    path: DOCS_PAGE,
    operationId: 'docsPage',
    summary: 'This document, as a page (Swagger UI)',
    responses: { 200: { description: 'The page.', types: ['text/html'], headers: ['Content-Security-Policy'] } },
  },
  {
    path: `${DOCS_PAGE}/swagger-initializer.js`,
    operationId: 'docsPageScript',
    summary: "The page's script",
    responses: { 200: { description: 'The script.', types: ['text/javascript'] } },
  },
  {
    path: `${DOCS_PAGE}/{asset}`,
    operationId: 'docsPageAsset',
    summary: "A file of the page's",
    responses: {
      // Its media type is the file's, by its name, not chosen by Accept.
      200: {
        description: `The file, in its own media type (${[...new Set(Object.values(ASSETS).map((type) => type.split(';')[0]))].join(', ')}).`,
        types: ['*/*'],
        headers: ['Cache-Control'],
      },
      404: { description: 'No such file of the page.', types: ['text/plain'] },
    },
  },
];

/** The router of the API description `describe` makes (openapi.ts) and the page that shows it. */
export function docsRouter(describe: () => object): Router {
  const router = newRouter();
  const cache = new Map<string, Buffer>();
  // Built on first request: a document that cannot be built fails /openapi.json (and its
  // tests), not the start of the API.
  let document: string | undefined;

  router.get('/openapi.json', (ctx) => {
    document ??= JSON.stringify(describe());
    ctx.type = 'application/json';
    ctx.body = document;
  });

  router.get(DOCS_PAGE, (ctx) => {
    ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });

  router.get('/docs/swagger-initializer.js', (ctx) => {
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.body = INITIALIZER;
  });

  router.get('/docs/:asset', async (ctx) => {
    const type = Object.hasOwn(ASSETS, ctx.params.asset) ? ASSETS[ctx.params.asset] : undefined;
    if (!type) throw new HttpError(404);
    let content = cache.get(ctx.params.asset);
    if (!content) {
      content = await fs.promises.readFile(path.join(SWAGGER_UI_DIR, ctx.params.asset));
      cache.set(ctx.params.asset, content);
    }
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.type = type;
    ctx.body = content;
  });

  return router;
}
