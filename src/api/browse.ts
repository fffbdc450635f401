import * as yup from 'yup';
import { LIST_FILTERS, type PageFilters } from '../bikes/filters';
import { readPage, SORTS } from '../bikes/pages';
import { readUnlessCurrent } from '../http/conditional';
import { HttpError } from '../http/errors';
import { invalidFieldHeader } from '../http/invalid-field';
import { cursor, inputOf, pageSize, WRONG_TYPE } from '../http/schema';
import { BIKES, bikesJson, EXAMPLE_BIKE } from './bike-json';
import { operation } from './operation';

/**
 * GET /bikes (docs/reference/browse-and-sync.md#paged-listing): the catalog filtered, in one of its orders, a page
 * at a time (the statements are src/bikes/pages.ts); each page links the next with a cursor that
 * says where it starts (page-cursors.ts).
 */

/** The most bikes one page gives, and how many when the client does not say. */
const MAX_PAGE = 250;
const DEFAULT_PAGE = 24;

/** Text in a query string: any but U+0000, which PostgreSQL cannot hold. */
const queryText = () =>
  yup
    .string()
    .typeError(WRONG_TYPE)
    .strict()
    // eslint-disable-next-line no-control-regex -- U+0000 is exactly what it excludes
    .matches(/^[^\u0000]*$/, '${path} contains U+0000');

/** The most values one filter takes (`vendor=A&vendor=B...`). */
const MAX_VALUES = 100;

/**
 * A filter that may be repeated: any of its values (docs/reference/http.md#query-parameters: the
 * endpoint reads one value as a list of one).
 */
const queryList = () => yup.array(queryText().defined()).typeError(WRONG_TYPE).strict().min(1).max(MAX_VALUES);

/** The longest shopper's search, in characters. */
const MAX_WORDS = 200;

/** The filters, one schema each (filters.ts says what each means in SQL). */
export const pageFilters = {
  vendor: queryList(),
  productType: queryList(),
  availableForSale: yup.boolean().typeError(WRONG_TYPE).strict(),
  inStock: yup.boolean().typeError(WRONG_TYPE).strict(),
  currency: queryList(),
  minPrice: yup.number().typeError(WRONG_TYPE).strict(),
  maxPrice: yup.number().typeError(WRONG_TYPE).strict(),
  titleContains: queryText(),
  q: queryText().max(MAX_WORDS),
} satisfies Record<keyof PageFilters, yup.Schema<unknown>>;

/** A price range only with its currency (the filters' query's rule, on every route that filters bikes). */
export const priceRangeInACurrency = (
  query: { currency?: string[]; minPrice?: number; maxPrice?: number },
  context: yup.TestContext,
) =>
  query.currency === undefined && (query.minPrice ?? query.maxPrice) !== undefined
    ? context.createError({ path: `${context.path}.currency`, message: '${path} is required with a price range' })
    : true;

/**
 * The query: its parameters, a price range only with its currency, relevance only with words. A
 * parameter it does not know is refused before (endpoint.ts; docs/reference/http.md#query-parameters).
 */
const browseQuery = yup
  .object({
    ...pageFilters,
    sort: yup.string().typeError(WRONG_TYPE).strict().oneOf(SORTS),
    limit: pageSize(MAX_PAGE),
    cursor: cursor(),
  })
  .test('price range in a currency', priceRangeInACurrency)
  .test('relevance with words', (query, context) =>
    query.sort === 'relevance' && filtersOf(query).q === undefined
      ? context.createError({ path: `${context.path}.sort`, message: '${path} relevance needs q' })
      : true,
  );

/**
 * The filters as a statement takes them: a list's values each once, in one order (the same set,
 * the same cursor and ETag), an empty `q` as none.
 */
export function filtersOf<Query extends PageFilters>(query: Query): PageFilters {
  const filters: PageFilters = { ...query };
  for (const name of LIST_FILTERS) {
    const values = query[name];
    if (values) filters[name] = [...new Set(values)].sort();
  }
  if (query.q?.trim() === '') delete filters.q;
  return filters;
}

/** The filters' parameters, for the document: what each means, and an example. */
export const FILTER_PARAMETERS = {
  vendor: {
    description: 'Only this vendor (the whole string, case-sensitive); repeated, any of them.',
    example: ['Sentra Cycles', 'Trek'],
  },
  productType: {
    description: 'Only this product type (the whole string, case-sensitive); repeated, any of them.',
    example: ['Hybrid'],
  },
  availableForSale: { description: '`true` or `false`.', example: true },
  inStock: { description: '`true`: totalInventory above 0; `false`: 0 or less.', example: true },
  currency: {
    description: "The minimum price's currency code; repeated, any of them; required with `minPrice` or `maxPrice`.",
    example: ['USD'],
  },
  minPrice: { description: 'The minimum price at least this (in `currency`).', example: 100 },
  maxPrice: { description: 'The minimum price at most this (in `currency`).', example: 1000 },
  titleContains: {
    description: 'The title contains this text (case-sensitive; `%`, `_` and `\\` match themselves).',
    example: 'Hybrid',
  },
  q: {
    description:
      `A shopper's words, at most ${MAX_WORDS} characters: every word in the title, vendor, product type or ` +
      'description, in any case, accents ignored; a word of 5 to 8 letters with one typo, of 9 or more with two; ' +
      'the last word also as a prefix. Empty: as if not sent.',
    example: 'moutain bik',
  },
} satisfies Record<keyof PageFilters, { description: string; example: string | number | boolean | string[] }>;

const EXAMPLE_PAGE_CURSOR = 'eyJrIjoicGFnZSIsInMiOiJwcmljZSIsImEiOlsiVVNEIiwiNDk5Ljk5Il0sInEiOiI0MiJ9.c2lnbmF0dXJl';

export const browseBikes = operation({
  method: 'get',
  path: '/bikes',
  summary: 'Browse bikes: filtered, sorted, a page at a time',
  description:
    `A page of bikes (${DEFAULT_PAGE} unless \`limit\` says, at most ${MAX_PAGE}) that pass every filter given, ` +
    'in the order `sort` names. While another page follows, `Link: <...>; rel="next"` gives its address, with ' +
    'the cursor that starts it (keyset: each page costs the same however deep). `GET /bikes/` is the same route.',
  input: inputOf({ query: browseQuery }),
  invalid: 400,
  queryParameters: {
    ...FILTER_PARAMETERS,
    sort: {
      description:
        'The order: `created` (insertion order, the default), `title` (its first 200 characters, by code ' +
        'point), `price` (by currency, then minimum price), `updatedAt` (when last changed); `-` before any ' +
        'of these reverses it; `relevance` (with `q` alone, and its default): every word as given before typos, ' +
        'title before vendor, product type and description. Ties go by insertion order.',
      example: 'price',
    },
    limit: { description: `Bikes per page, 1 to ${MAX_PAGE}; ${DEFAULT_PAGE} when absent.`, example: DEFAULT_PAGE },
    cursor: {
      description: 'Where the page starts: from the `Link` of the page before. Only with the same sort and filters.',
      example: EXAMPLE_PAGE_CURSOR,
    },
  },
  responseHeaders: ['Catalog-Cursor', 'Link'],
  ok: { description: 'A page of bikes', schema: BIKES, example: [EXAMPLE_BIKE] },
  meanings: {
    400:
      'A parameter that is not valid (`X-Invalid-Field` names it), a price range without `currency`, a parameter ' +
      'the route does not know, or a cursor of another sort or other filters, or not of this service.',
  },
  /**
   * A page: 304 before any row is read when the client's copy is current; `Link` to the next page
   * while there is one.
   */
  async handle(ctx, { query }, _request, { reader, tags, feed, pages }) {
    const { sort: asked, limit = DEFAULT_PAGE, cursor, ...given } = query;
    const filters = filtersOf(given);
    const sort = asked ?? (filters.q === undefined ? 'created' : 'relevance');
    const after = cursor === undefined ? undefined : pages.open(cursor, sort, filters);
    if (cursor !== undefined && after === undefined) throw new HttpError(400, invalidFieldHeader('query.cursor'));
    const request = { sort, filters, after, limit };
    const tagOf = (version: string[]) => tags.list(...version, JSON.stringify(request));
    const page = await readUnlessCurrent(ctx, tagOf, (current) => readPage(reader(ctx).reads.query, request, current));
    // As a list's (lists.ts): a 304 carries no Catalog-Cursor.
    if (!page) return;
    ctx.set('Catalog-Cursor', feed.listCursor(page.seen));
    if (page.next) {
      const next = new URLSearchParams(ctx.querystring);
      next.set('cursor', pages.seal(sort, filters, page.next));
      ctx.set('Link', `<${ctx.path}?${next}>; rel="next"`);
    }
    ctx.type = 'application/json';
    ctx.body = bikesJson(page.bikes);
  },
});
