/**
 * A 400 names the field that failed in a header, the body staying the bare reason phrase
 * (docs/reference/bike.md#which-field-failed).
 */
const INVALID_FIELD_HEADER = 'X-Invalid-Field';

/**
 * The header for a route input that failed at `path`, yup's path in the input (routerOf checks
 * `{ body, query, headers }`): a body's field by its path in the body as the client sent it
 * (`body.priceRange.minPrice.amount` is `priceRange.minPrice.amount`), a query parameter as
 * `query.<name>` (`query.q`, `query.vendor[1]`: never mistaken for a field of the body), a header by
 * its lowercase name (`headers.idempotency-key` is `idempotency-key`). None when a part fails as a
 * whole (a body that is not an object). yup makes paths of the schema's keys only, and unknown keys
 * are never checked, so the value is never the client's bytes.
 */
export function invalidFieldHeader(path: string): Record<string, string> {
  const [part, ...within] = path.split('.');
  const field = within.length === 0 ? '' : part === 'query' ? path : within.join('.');
  return field ? { [INVALID_FIELD_HEADER]: field } : {};
}
