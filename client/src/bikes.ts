import { type Context, canonicalJson } from './context.ts';
import { ConflictError, refusal, ServerError } from './errors.ts';
import { persist } from './retry.ts';
import type { Bike, BikePatch, NewBike } from './types.ts';

export interface CallOptions {
  /** Stops the call (and its retries): it rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** `X-Read-From: primary`: a read right after a write sees it, wherever the service reads a replica. */
const PRIMARY = { 'X-Read-From': 'primary' } as const;

/** GET /bikes/{id}: the bike, whose state the client remembers for a later update. */
export async function getBike(
  ctx: Context,
  id: string,
  { signal, primary = false }: CallOptions & { primary?: boolean } = {},
): Promise<Bike> {
  const { answer } = await persist(
    (bounded) =>
      ctx.api.GET('/bikes/{id}', {
        params: { path: { id }, header: primary ? PRIMARY : undefined },
        signal: bounded,
      }),
    ctx.persistence(`GET /bikes/${id}`, signal),
  );
  if (!answer.data) throw refusal(`GET /bikes/${id}`, answer.response);
  ctx.states.remember(answer.data, answer.response);
  return answer.data;
}

/**
 * POST /bikes/ under one Idempotency-Key (a random UUID unless given) kept across its retries
 * (docs/reference/caching-and-conditions.md#idempotency-keys): whatever the answers, the service makes one bike at most.
 * After an answer that leaves the outcome unknown (504, a lost connection), the bike named in
 * `Content-Location` is read: if it is there, it is the answer; otherwise the key is sent again,
 * which answers the bike if the first attempt made it, or makes it.
 */
export async function createBike(
  ctx: Context,
  bike: NewBike,
  { signal, idempotencyKey = uuidV4() }: CallOptions & { idempotencyKey?: string } = {},
): Promise<Bike> {
  const { answer } = await persist(
    (bounded) =>
      ctx.api.POST('/bikes/', {
        params: { header: { 'Idempotency-Key': idempotencyKey } },
        body: bike,
        signal: bounded,
      }),
    { ...ctx.persistence('POST /bikes/', signal), tokens: ctx.tokens, idempotencyKey, writes: true },
    async (unsettled, bounded) => {
      const location = unsettled?.response.headers.get('Content-Location');
      const id = location?.slice(location.lastIndexOf('/') + 1);
      if (!id) return undefined;
      const found = await ctx.api.GET('/bikes/{id}', { params: { path: { id }, header: PRIMARY }, signal: bounded });
      return found.data ? found : undefined;
    },
  );
  if (!answer.data) throw refusal('POST /bikes/', answer.response);
  ctx.states.remember(answer.data, answer.response);
  return answer.data;
}

/**
 * PATCH /bikes/{id} with `If-Match`: the changes apply only to the bike as this client last read
 * or wrote it; or, given the bike itself (from a list, a page, the feed), only to that state of it.
 * A bike the client has not read is read first. A 412 (or a bike given that is no longer as it
 * is) throws ConflictError with the bike as it is now. A retry after an unknown outcome that finds
 * the changes already there returns the bike: the first attempt applied them.
 */
export async function updateBike(
  ctx: Context,
  target: string | Bike,
  changes: BikePatch,
  { signal }: CallOptions = {},
): Promise<Bike> {
  const id = typeof target === 'string' ? target : target.id;
  const what = `PATCH /bikes/${id}`;
  let etag = ctx.states.etagOf(id, typeof target === 'string' ? undefined : target);
  if (etag === undefined) {
    const current = await getBike(ctx, id, { signal, primary: true });
    if (typeof target !== 'string' && canonicalJson(current) !== canonicalJson(target)) {
      throw new ConflictError(current);
    }
    etag = ctx.states.etagOf(id);
  }
  const { answer, unknown } = await persist(
    (bounded) =>
      ctx.api.PATCH('/bikes/{id}', {
        params: { path: { id }, header: etag === undefined ? undefined : { 'If-Match': etag } },
        body: changes,
        signal: bounded,
      }),
    { ...ctx.persistence(what, signal), tokens: ctx.tokens, writes: true },
  );
  if (answer.data) {
    ctx.states.remember(answer.data, answer.response);
    return answer.data;
  }
  if (answer.response.status !== 412) {
    if (answer.response.status === 404) ctx.states.forget(id);
    throw refusal(what, answer.response);
  }
  const current = await getBike(ctx, id, { signal, primary: true }).catch(stillUnknown(what, unknown));
  const applied = Object.entries(changes).every(
    ([field, value]) => canonicalJson(current[field as keyof Bike]) === canonicalJson(value),
  );
  if (unknown && applied) return current;
  throw new ConflictError(current);
}

/**
 * DELETE /bikes/{id}, with `If-Match` when the client has read the bike: a bike changed since is
 * kept (ConflictError, with the bike as it is now). A 404 after an unknown outcome is the first
 * attempt's delete.
 */
export async function deleteBike(ctx: Context, id: string, { signal }: CallOptions = {}): Promise<void> {
  const what = `DELETE /bikes/${id}`;
  const etag = ctx.states.etagOf(id);
  const { answer, unknown } = await persist(
    (bounded) =>
      ctx.api.DELETE('/bikes/{id}', {
        params: { path: { id }, header: etag === undefined ? undefined : { 'If-Match': etag } },
        signal: bounded,
      }),
    { ...ctx.persistence(what, signal), tokens: ctx.tokens, writes: true },
  );
  const { status } = answer.response;
  if (status === 200 || (status === 404 && unknown)) return ctx.states.forget(id);
  if (status === 412) {
    throw new ConflictError(await getBike(ctx, id, { signal, primary: true }).catch(stillUnknown(what, unknown)));
  }
  throw refusal(what, answer.response);
}

/**
 * A read after a write whose outcome was unknown, that did not settle either: the write's outcome
 * is still unknown, whatever the read's error says of the read (a read writes nothing).
 */
function stillUnknown(what: string, unknown: boolean): (err: unknown) => never {
  return (err) => {
    if (!unknown || !(err instanceof ServerError)) throw err;
    throw new ServerError(`${what}: its outcome is unknown, and ${err.message}`, err.status, 'unknown', undefined, {
      cause: err,
    });
  };
}

/**
 * A random (version 4) UUID: an Idempotency-Key no one can guess. From getRandomValues, as
 * crypto.randomUUID exists only in secure contexts (not in a page served over plain HTTP).
 */
function uuidV4(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
