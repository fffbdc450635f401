import type { HeaderName } from './headers';

/**
 * A route the service serves beside the API's operations, for operators and the docs page
 * (health-router.ts, docs-router.ts): the document lists it as it is, under the tag `operations`.
 */
export interface PlainRoute {
  /** The OpenAPI path: `{name}` for a parameter (any string). */
  path: string;
  operationId: string;
  summary: string;
  /** Each status it answers: what it means, the media types of its body, the headers it carries besides X-Request-Id. */
  responses: Record<number, { description: string; types: string[]; headers?: HeaderName[] }>;
}
