import type { components, operations } from './schema.ts';

/** The service's types, as its OpenAPI document declares them (schema.ts, generated). */
type Schemas = components['schemas'];

export type Bike = Schemas['Bike'];
/** A bike's `priceRange`: its `minPrice` and `maxPrice`. */
export type PriceRange = Schemas['PriceRange'];
/** An `amount` and its `currencyCode`. */
export type Money = Schemas['Money'];
/** The fields a create sends: all of a bike's but `id` and `handle`, which the service makes. */
export type NewBike = Schemas['NewBike'];
/** Any of a bike's fields, for an update. */
export type BikePatch = Schemas['BikePatch'];

/** A change of the feed, told apart by `type`: the document's `Change` carries `bike` on an upsert only. */
export type Change = Omit<Schemas['Change'], 'type' | 'bike'> &
  ({ type: 'upsert'; bike: Bike } | { type: 'delete'; bike?: undefined });

/**
 * What `follow` hands over: the whole catalog (`list`, first, and again after the feed could not
 * go on: replace what you hold with it), then each change after it, in order. `cursor` is where
 * to resume from (`follow(onChange, { from: cursor })`).
 */
export type CatalogEvent = Change | { type: 'list'; bikes: Bike[]; cursor: string };

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
export type Filters = Omit<FilterQuery, 'sort' | 'limit' | 'cursor' | PriceFilters> &
  (
    | { currency?: undefined; minPrice?: undefined; maxPrice?: undefined }
    | (Required<Pick<FilterQuery, 'currency'>> & Pick<FilterQuery, 'minPrice' | 'maxPrice'>)
  );
/**
 * The filters as the query's type has them, each repeatable one a list: openapi-fetch writes one
 * value (`vendor=Trek`) as it writes a list of one.
 */
export const filterQuery = (filters: Filters) => filters as Omit<BrowseQuery, 'sort' | 'limit' | 'cursor'>;
/** GET /bikes's orders, each reversed with a leading `-`. */
export type Sort = NonNullable<BrowseQuery['sort']>;

/** GET /bikes/facets's answer: the total, each facet's values and counts, the price ranges. */
export type Facets = operations['bikeFacets']['responses'][200]['content']['application/json'];
/** A facet GET /bikes/facets counts. */
export type FacetName = keyof Facets['facets'];
