import type Koa from 'koa';
import type { BikeRepository } from '../bikes/repository';

/**
 * X-Read-From is a list (it may come as `primary, replica`, or twice): any element `primary`
 * asks for the primary; any other value is ignored (docs/reference/database.md#replica-reads).
 */
function wantsPrimary(ctx: Koa.Context): boolean {
  return ctx
    .get('X-Read-From')
    .split(',')
    .some((element) => element.trim().toLowerCase() === 'primary');
}

/**
 * Where a request's reads go: `bikes`, which may read a replica, unless the client asks for the
 * primary with `X-Read-From: primary` (to read its own writes). While a replica answers for a
 * primary that cannot be reached, the answer says so (docs/reference/database.md#reads-while-the-primary-is-away):
 * X-Stale, with the commit time of the last transaction the replica has replayed and its age in
 * seconds (or `unknown`). Set before the read, under the state the read is served in; an error
 * answer drops it (errors.ts).
 */
export function readerOf(bikes: BikeRepository, onPrimary: BikeRepository) {
  return function reader(ctx: Koa.Context): BikeRepository {
    const repository = wantsPrimary(ctx) ? onPrimary : bikes;
    const stale = repository.stale();
    if (stale) {
      const { replayedAt } = stale;
      const age = replayedAt && ((Date.now() - replayedAt.getTime()) / 1000).toFixed(3);
      ctx.set('X-Stale', replayedAt ? `as-of=${replayedAt.toISOString()}; age=${age}` : 'unknown');
    }
    return repository;
  };
}
