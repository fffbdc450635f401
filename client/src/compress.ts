import type { Middleware } from 'openapi-fetch';

/**
 * Sends every request body gzip-compressed (`Content-Encoding: gzip`), which each route that
 * reads a body takes (docs/reference/requests-and-answers.md#content-codings). CompressionStream is in
 * browsers and Node.js alike.
 */
export const gzipBodies: Middleware = {
  async onRequest({ request }) {
    if (request.body === null) return undefined;
    const plain = new Blob([await request.arrayBuffer()]);
    const gzipped = await new Response(plain.stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer();
    const headers = new Headers(request.headers);
    headers.set('Content-Encoding', 'gzip');
    return new Request(request, { body: gzipped, headers });
  },
};
