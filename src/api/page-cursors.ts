import { createHash } from 'node:crypto';
import * as yup from 'yup';
import { FILTER_NAMES, type PageFilters } from '../bikes/filters';
import type { PageKey, Sort } from '../bikes/pages';
import type { Cursors } from '../http/cursors';

/**
 * The page cursors (docs/reference/browse-and-sync.md#cursors): where the next page starts (the last row's keys
 * and seq), bound to the sort and the filters of the pages it continues. A cursor of another sort
 * or other filters would start a page in the wrong place: it is refused like a tampered one.
 */
const payload = yup
  .object({
    k: yup.string().strict().defined().oneOf(['page']),
    s: yup.string().strict().defined(),
    f: yup.string().strict().defined(),
    a: yup.array(yup.string().strict().defined()).strict().defined(),
    q: yup
      .string()
      .strict()
      .defined()
      .matches(/^-?\d{1,19}$/),
  })
  .strict()
  .defined();

/** The filters, short: every filter's value or null, in their declared order, hashed. */
const filtersMark = (filters: PageFilters) =>
  createHash('sha256')
    .update(JSON.stringify(FILTER_NAMES.map((name) => filters[name] ?? null)))
    .digest('base64url')
    .slice(0, 22);

export function pageCursors(cursors: Cursors) {
  return {
    seal(sort: Sort, filters: PageFilters, key: PageKey): string {
      return cursors.seal({ k: 'page', s: sort, f: filtersMark(filters), a: key.keys, q: key.seq });
    },
    /** Where the page starts, or undefined for a cursor not of ours, or of another sort or other filters. */
    open(cursor: string, sort: Sort, filters: PageFilters): PageKey | undefined {
      const value = cursors.open(cursor);
      if (!payload.isValidSync(value)) return undefined;
      const { s, f, a, q } = value;
      return s === sort && f === filtersMark(filters) ? { keys: a, seq: q } : undefined;
    },
  };
}

export type PageCursors = ReturnType<typeof pageCursors>;
