import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/**
 * Opaque cursors (docs/reference/browse-and-sync.md#cursors): what the service needs to go on from where a client
 * stopped (a page's last sort key, a position in the change feed), as JSON, and a MAC made with a
 * key derived from the signing secret, so that every instance opens the others' cursors and no
 * client can forge or alter one. What a cursor holds is the service's business: clients pass it
 * back as they got it.
 */
export interface Cursors {
  seal(payload: object): string;
  /** What a cursor this service sealed holds; undefined for any other string. */
  open(cursor: string): unknown;
}

/** The MAC's length in base64url characters: 128 bits. */
const MAC_LENGTH = 22;

export function cursors(secret: string): Cursors {
  const key = Buffer.from(hkdfSync('sha256', secret, 'bike-catalog', 'cursors', 32));
  const mac = (data: string) => createHmac('sha256', key).update(data).digest('base64url').slice(0, MAC_LENGTH);
  return {
    seal(payload) {
      const data = Buffer.from(JSON.stringify(payload)).toString('base64url');
      return `${data}.${mac(data)}`;
    },
    open(cursor) {
      const [data, tag, ...rest] = cursor.split('.');
      if (rest.length > 0 || !data || !tag) return undefined;
      const given = Buffer.from(tag);
      const expected = Buffer.from(mac(data));
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      try {
        return JSON.parse(Buffer.from(data, 'base64url').toString('utf8'));
      } catch {
        return undefined;
      }
    },
  };
}
