import { Readable } from 'node:stream';
import type Koa from 'koa';
import * as yup from 'yup';
import type { Bike } from '../bikes/bike';
import { LIST_BATCH_SIZE } from '../bikes/repository';
import { readUnlessCurrent } from '../http/conditional';
import { inputOf, NO_INPUT, WRONG_TYPE } from '../http/schema';
import { BIKES, bikesJson, EXAMPLE_BIKE } from './bike-json';
import { type Api, operation } from './operation';

/**
 * Every bike, and the bikes whose title contains a term: one JSON array each, streamed
 * (docs/reference/reads-and-writes.md#all-bikes-at-any-size), its rows all of one snapshot.
 */

/**
 * Sends the bikes as one JSON array. A result that fits in one batch goes out as one plain body
 * (most searches); a larger one is written batch by batch as rows arrive. The first batch was read
 * before the status is sent (repository.ts, `list`), so a database that fails there gives a 503; a
 * failure later destroys the connection, so the client sees a broken response, never a short array.
 */
async function sendBikeArray(ctx: Koa.Context, batches: AsyncGenerator<Bike[]>, batchSize: number): Promise<void> {
  const first = await batches.next();
  ctx.type = 'application/json';
  if (first.done || first.value.length < batchSize) {
    ctx.body = first.done ? '[]' : bikesJson(first.value);
    void batches.return(undefined);
    return;
  }
  const head = bikesJson(first.value);
  async function* chunks() {
    yield head.slice(0, -1);
    try {
      for await (const batch of batches) yield ',' + bikesJson(batch).slice(1, -1);
    } catch (err) {
      // Cut the connection, so the client sees a broken response (a compressing stream in
      // between would otherwise wait for the rest forever).
      ctx.res.destroy();
      throw err;
    }
    yield ']';
  }
  const body = Readable.from(chunks(), { objectMode: false });
  // However the response ends (whole, cut, HEAD, a compressor in between), the batches end with
  // it, and with them the list's snapshot and its connection (a HEAD never starts `chunks`).
  ctx.res.once('close', () => {
    body.destroy();
    void batches.return(undefined);
  });
  ctx.body = body;
}

/**
 * A list, or a search for `term`: 304 before any row is read when the client's copy is current.
 * Its tag is weak, the same whatever the coding, and names the catalog's version read in the
 * rows' snapshot.
 */
async function sendList(ctx: Koa.Context, { reader, tags, feed }: Api, term?: string) {
  const tagOf = (version: string[]) => tags.list(...version, ...(term === undefined ? [] : [term]));
  const list = await readUnlessCurrent(ctx, tagOf, (current) => reader(ctx).list({ titleContains: term, current }));
  // A 304 carries no Catalog-Cursor: the copy the client has came with its own.
  if (!list) return;
  ctx.set('Catalog-Cursor', feed.listCursor(list.seen));
  await sendBikeArray(ctx, list.batches, LIST_BATCH_SIZE);
}

/** The search term: one `query` parameter (given twice it is a list, and refused), without U+0000. */
const searchQuery = yup.object({
  query: yup
    .string()
    .typeError(WRONG_TYPE)
    .strict()
    // eslint-disable-next-line no-control-regex -- U+0000 is exactly what it excludes
    .matches(/^[^\u0000]*$/),
});

export const listBikes = operation({
  method: 'get',
  path: '/bikes/all',
  summary: 'List every bike',
  description: 'Every bike, oldest first (creation order). No pagination: the array is streamed.',
  limit: 'listStreams',
  input: NO_INPUT,
  responseHeaders: ['Catalog-Cursor'],
  ok: { description: 'Every bike', schema: BIKES, example: [EXAMPLE_BIKE] },
  async handle(ctx, _input, _request, api) {
    await sendList(ctx, api);
  },
});

export const searchBikesByTitle = operation({
  method: 'get',
  path: '/bikes/search/by-title',
  summary: 'Search bikes by title',
  description: 'Case-sensitive substring match on the title, oldest first. `%`, `_` and `\\` match themselves.',
  limit: 'listStreams',
  input: inputOf({ query: searchQuery }),
  invalid: 400,
  queryParameters: {
    query: {
      description: 'The text to look for. Missing or empty: every bike. Given twice, or with U+0000: 400.',
      example: 'Hybrid',
    },
  },
  responseHeaders: ['Catalog-Cursor'],
  ok: { description: 'The matching bikes', schema: BIKES, example: [EXAMPLE_BIKE] },
  meanings: { 400: 'A failed search: `query` given more than once, or containing U+0000.' },
  async handle(ctx, { query }, _request, api) {
    await sendList(ctx, api, query.query ?? '');
  },
});
