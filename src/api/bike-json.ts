import fastJson from 'fast-json-stringify';
import { bike } from '../bikes/bike';
import type { Change } from '../feed/changes';
import { toJsonSchema } from '../http/json-schema';
import { exampleOf } from '../http/schema';

/**
 * The bike as the API writes it: its JSON, compiled from the bike's schema (the bytes
 * JSON.stringify writes, a property test checks it, a fifth faster on /bikes/all's batches), and
 * its schema and example in the OpenAPI document.
 */
export const bikeJson = fastJson(toJsonSchema(bike));
export const bikesJson = fastJson({ type: 'array', items: toJsonSchema(bike) });

/** A change as the feed gives it, in a page and in an event alike: the bike's bytes as every other route writes them. */
export function changeJson(change: Change, cursor: string): string {
  const head = `{"cursor":${JSON.stringify(cursor)},"type":"${change.kind}","id":"${change.id}"`;
  return change.bike ? `${head},"bike":${bikeJson(change.bike)}}` : `${head}}`;
}

/** A schema of the OpenAPI document's components (document.ts). */
export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const BIKE = ref('Bike');
export const BIKES = { type: 'array', items: BIKE };

// Examples, from those the bike's fields carry. test/ops/openapi.test.ts sends each request example to the server.
export const EXAMPLE_BIKE = exampleOf(bike);
