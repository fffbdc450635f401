import fastJson from 'fast-json-stringify';
import { bike } from '../bikes/bike';
import type { Change } from '../feed/changes';
import { toJsonSchema } from './json-schema';

/**
 * JSON for bikes, compiled from the bike's schema: the bytes JSON.stringify writes (a property
 * test checks it), a fifth faster on /bikes/all's batches.
 */
export const bikeJson = fastJson(toJsonSchema(bike));
export const bikesJson = fastJson({ type: 'array', items: toJsonSchema(bike) });

/** A change as the feed gives it, in a page and in an event alike: the bike's bytes as every other route writes them. */
export function changeJson(change: Change, cursor: string): string {
  const head = `{"cursor":${JSON.stringify(cursor)},"type":"${change.kind}","id":"${change.id}"`;
  return change.bike ? `${head},"bike":${bikeJson(change.bike)}}` : `${head}}`;
}
