import * as yup from 'yup';
import { FACET_NAMES, type Facet, readFacets } from '../bikes/facets';
import { readUnlessCurrent } from '../http/conditional';
import { inputOf, WRONG_TYPE } from '../http/schema';
import { FILTER_PARAMETERS, filtersOf, pageFilters, priceRangeInACurrency } from './browse';
import { operation } from './operation';

/**
 * GET /bikes/facets (docs/reference/browse-and-sync.md#facets): for a storefront's listing page, how many bikes
 * pass the filters and `q` of GET /bikes, each facet's values with their counts (each counted
 * without its own filter), and the range of minimum prices in each currency.
 */

/** A comma list of facets, each one of FACET_NAMES, each once. */
const FACETS_LIST = new RegExp(`^(${FACET_NAMES.join('|')})(,(${FACET_NAMES.join('|')}))*$`);

/** The filters of GET /bikes, and the facets to count. */
const facetsQuery = yup
  .object({
    ...pageFilters,
    facets: yup
      .string()
      .typeError(WRONG_TYPE)
      .strict()
      .matches(FACETS_LIST, '${path} names a facet that is not one of the five'),
  })
  .test('price range in a currency', priceRangeInACurrency);

const facetValue = { oneOf: [{ type: 'string' }, { type: 'boolean' }] };

const FACETS_ANSWER = {
  type: 'object',
  required: ['total', 'facets', 'prices'],
  additionalProperties: false,
  properties: {
    total: { type: 'integer', minimum: 0, description: 'The bikes that pass every filter and `q`.' },
    facets: {
      type: 'object',
      additionalProperties: false,
      description: 'Each facet asked for: its values, most bikes first (then by value).',
      properties: Object.fromEntries(
        FACET_NAMES.map((facet) => [
          facet,
          {
            type: 'array',
            items: {
              type: 'object',
              required: ['value', 'count', 'selected'],
              additionalProperties: false,
              properties: {
                value: facetValue,
                count: {
                  type: 'integer',
                  minimum: 0,
                  description: "The bikes with this value that pass every filter but this facet's own.",
                },
                selected: { type: 'boolean', description: "The value is one of this facet's filter's." },
              },
            },
          },
        ]),
      ),
    },
    prices: {
      type: 'array',
      description: 'Per currency, the lowest and highest minimum price, every filter but the price range applied.',
      items: {
        type: 'object',
        required: ['currency', 'min', 'max'],
        additionalProperties: false,
        properties: { currency: { type: 'string' }, min: { type: 'number' }, max: { type: 'number' } },
      },
    },
  },
};

const EXAMPLE_FACETS = {
  total: 312,
  facets: {
    vendor: [
      { value: 'Trek', count: 120, selected: true },
      { value: 'Giant', count: 95, selected: false },
    ],
  },
  prices: [{ currency: 'USD', min: 499.99, max: 12999 }],
};

export const bikeFacets = operation({
  method: 'get',
  path: '/bikes/facets',
  summary: "Facet counts, the total and the price range of GET /bikes's filters",
  description:
    'How many bikes pass every filter and `q` (`total`), each facet of `facets` with its values and their ' +
    "counts, each counted with every filter but that facet's own (a selected value listed even at 0), and per " +
    'currency the lowest and highest minimum price, with every filter but the price range.',
  input: inputOf({ query: facetsQuery }),
  invalid: 400,
  queryParameters: {
    ...FILTER_PARAMETERS,
    facets: {
      description: `The facets to count, a comma list of ${FACET_NAMES.map((f) => `\`${f}\``).join(', ')}; all when absent.`,
      example: 'vendor,productType',
    },
  },
  ok: { description: 'The total, the facets and the price ranges', schema: FACETS_ANSWER, example: EXAMPLE_FACETS },
  meanings: {
    400:
      'A parameter that is not valid (`X-Invalid-Field` names it), a facet not one of the five, a price range ' +
      'without `currency`, or a parameter the route does not know.',
  },
  /** The counts: 304 before any row is read when the client's copy is current. */
  async handle(ctx, { query }, _request, { reader, tags }) {
    const { facets: asked, ...given } = query;
    const filters = filtersOf(given);
    const facets = asked === undefined ? FACET_NAMES : FACET_NAMES.filter((f) => asked.split(',').includes(f));
    const request = { facets: facets as Facet[], filters };
    const tagOf = (version: string[]) => tags.list(...version, 'facets', JSON.stringify(request));
    const answer = await readUnlessCurrent(ctx, tagOf, (current) =>
      readFacets(reader(ctx).reads.query, request, current),
    );
    if (!answer) return;
    const { total, facets: counted, prices } = answer;
    ctx.type = 'application/json';
    ctx.body = JSON.stringify({ total, facets: counted, prices });
  },
});
