import { createHash, randomUUID } from 'node:crypto';
import type Koa from 'koa';
import * as yup from 'yup';
import { scopeOf } from '../auth/caller';
import { bikeFields, deriveHandle, patch, replacement } from '../bikes/bike';
import { asStored } from '../bikes/fields';
import { PRECONDITION_FAILED, type StoredBike } from '../bikes/repository';
import { WriteOutcomeUnknown } from '../db/pool';
import { type EntityTags, setValidators } from '../http/conditional';
import { callerOf } from '../http/endpoint';
import { HttpError } from '../http/errors';
import { exampleOf, inputOf, NO_INPUT, WRONG_TYPE } from '../http/schema';
import { BIKE, bikeJson, EXAMPLE_BIKE, ref } from './bike-json';
import { notFound, operation } from './operation';

/**
 * One bike: read it by id or by handle, create, replace, update or delete it. Reads come from
 * where the request's reads go (reads.ts); writes always go to the primary, each carrying its
 * preconditions in its own statement.
 */

/** One bike (a 304 when the client's copy is current: the representation step decides, once its tag is coded). */
function sendBike(ctx: Koa.Context, tags: EntityTags, { bike, state }: StoredBike): void {
  setValidators(ctx, tags.bike(state));
  ctx.type = 'application/json';
  ctx.body = bikeJson(bike);
}

/** A written bike, with the ETag of its new state; 412 when the write's preconditions failed. */
function sendWritten(ctx: Koa.Context, tags: EntityTags, written: StoredBike | typeof PRECONDITION_FAILED): void {
  if (written === PRECONDITION_FAILED) throw new HttpError(412);
  ctx.set('ETag', tags.bike(written.state));
  ctx.type = 'application/json';
  ctx.body = bikeJson(written.bike);
}

/**
 * A write of the bike at `path` whose outcome cannot be known (the database stopped answering
 * while it ran): 504, saying so, and naming the bike, so the client can look
 * (docs/reference/requests-and-answers.md#a-5xx-says-what-was-written).
 */
async function writing<T>(path: string, write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (err) {
    if (!(err instanceof WriteOutcomeUnknown)) throw err;
    throw new HttpError(504, { 'Write-Outcome': 'unknown', 'Content-Location': path }, { cause: err });
  }
}

/**
 * Idempotency-Key (docs/reference/caching-and-conditions.md#idempotency-keys): the client's name for one create, as
 * sent, 1 to 255 visible ASCII characters; no comma, so a key sent twice (which arrives joined by
 * one) is refused.
 */
const idempotencyKey = yup
  .string()
  .typeError(WRONG_TYPE)
  .strict()
  .matches(/^[\x21-\x2b\x2d-\x7e]{1,255}$/, '${path} is not a key');

const EXAMPLE_FIELDS = exampleOf(bikeFields);
const EXAMPLE_PATCH = { totalInventory: 7, availableForSale: false };

export const getBike = operation({
  method: 'get',
  path: '/bikes/:id',
  summary: 'Get a bike by id',
  input: NO_INPUT,
  ok: { description: 'The bike', schema: BIKE, example: EXAMPLE_BIKE },
  async handle(ctx, _input, { id }, { reader, tags }) {
    sendBike(ctx, tags, (await reader(ctx).findById(id)) ?? notFound());
  },
});

export const getBikeByHandle = operation({
  method: 'get',
  path: '/bikes/by-handle/:handle',
  summary: 'Get the first bike with a handle',
  description: 'Handles are not unique: the bike created first wins.',
  input: NO_INPUT,
  ok: { description: 'The bike', schema: BIKE, example: EXAMPLE_BIKE },
  async handle(ctx, _input, _request, { reader, tags }) {
    sendBike(ctx, tags, (await reader(ctx).findFirstByHandle(ctx.params.handle)) ?? notFound());
  },
});

export const createBike = operation({
  method: 'post',
  path: '/bikes/',
  summary: 'Create a bike',
  description:
    'The server makes the id (UUID v4) and the handle (from the title); a body id or handle is ignored. ' +
    'A field the bike does not have is ignored too: not stored, not returned. `POST /bikes` is the same route.',
  scope: 'bikes:write',
  limit: 'writes',
  input: inputOf({ body: bikeFields, headers: yup.object({ 'idempotency-key': idempotencyKey }) }),
  invalid: 400,
  writesResource: true,
  requestHeaders: ['Idempotency-Key'],
  responseHeaders: ['Idempotent-Replayed'],
  alsoAnswers: [409, 422],
  requestBody: {
    name: 'NewBike',
    description: 'Every field of a bike but id and handle, which the server makes.',
    example: EXAMPLE_FIELDS,
  },
  ok: { description: 'The created bike', schema: BIKE, example: EXAMPLE_BIKE },
  meanings: {
    400: 'No body, malformed JSON, a body that fails validation, or an Idempotency-Key that is not one.',
    409: 'A request with this Idempotency-Key is still running; retry later.',
    422: 'This Idempotency-Key was used with other fields.',
  },
  async handle(ctx, { body, headers }, _request, { onPrimary, tags }) {
    const create = { id: randomUUID(), handle: deriveHandle(body.title), fields: body };
    const path = `/bikes/${create.id}`;
    const key = headers['idempotency-key'];
    if (key === undefined) {
      return sendWritten(
        ctx,
        tags,
        await writing(path, onPrimary.create(callerOf(ctx), create.id, create.handle, create.fields)),
      );
    }
    // The bike as it will be stored: the fields as checked (unknown ones dropped), an optional one
    // left out as null (so leaving it out and sending null are the same create), in the map's order.
    const { id: _id, handle: _handle, ...fields } = asStored({ id: create.id, handle: create.handle, ...body });
    const request = {
      client: scopeOf(callerOf(ctx)),
      key,
      fingerprint: createHash('sha256').update(JSON.stringify(fields)).digest('base64url'),
      response: bikeJson({ id: create.id, handle: create.handle, ...fields }),
    };
    const outcome = await writing(path, onPrimary.createOnce(callerOf(ctx), request, create));
    switch (outcome.kind) {
      case 'created':
        return sendWritten(ctx, tags, outcome.stored);
      case 'replay':
        ctx.set('Idempotent-Replayed', 'true');
        ctx.set('ETag', tags.bike(outcome.state));
        ctx.type = 'application/json';
        ctx.body = outcome.response;
        return;
      case 'mismatch':
        throw new HttpError(422);
      case 'in-flight':
        throw new HttpError(409, { 'Retry-After': '1' });
    }
  },
});

export const replaceBike = operation({
  method: 'put',
  path: '/bikes/:id',
  summary: 'Replace a bike',
  description:
    'Stores the body under the path id (a body id is not used as the key; the handle is stored as given). ' +
    'A well-formed id with no bike creates it there. Every failure, including a body that fails ' +
    'validation, answers 404, as the specification says; a body in a Content-Encoding the service ' +
    'cannot decode is no failure of the replace, but an unsupported media: 415.',
  scope: 'bikes:write',
  limit: 'writes',
  input: inputOf({ body: replacement }),
  // Every failure of a replace is a 404, as the specification says.
  invalid: 404,
  preconditions: true,
  writesResource: true,
  requestBody: {
    name: 'BikeReplacement',
    description: 'Every field of a bike: those a create takes, plus a non-empty id and handle.',
    example: EXAMPLE_BIKE,
  },
  ok: { description: 'The stored bike', schema: BIKE, example: EXAMPLE_BIKE },
  meanings: { 404: 'Not a UUID, malformed JSON, or a body that fails validation.' },
  async handle(ctx, { body }, { id, conditions }, { onPrimary, tags }) {
    const { id: _ignored, handle, ...fields } = body;
    sendWritten(
      ctx,
      tags,
      await writing(`/bikes/${id}`, onPrimary.replace(callerOf(ctx), id, handle, fields, conditions)),
    );
  },
});

export const updateBike = operation({
  method: 'patch',
  path: '/bikes/:id',
  summary: 'Update some fields of a bike',
  description:
    'Writes only the fields in the body; each must be valid as on create (a priceRange must be complete). ' +
    'A body id is ignored; a handle is written as given; a new title does not change the handle. No body is ' +
    'an empty patch.',
  scope: 'bikes:write',
  limit: 'writes',
  input: inputOf({ body: patch }),
  invalid: 400,
  // The bike must exist before its fields are judged: a missing bike is 404 first
  // (docs/reference/reads-and-writes.md#partial-update-patch).
  mustExist: true,
  preconditions: true,
  writesResource: true,
  requestBody: {
    name: 'BikePatch',
    description: 'Any subset of the fields, each valid as on create.',
    example: EXAMPLE_PATCH,
    required: false,
    mediaTypes: ['application/json', 'application/merge-patch+json'],
  },
  ok: {
    description: 'The bike with the fields applied',
    schema: BIKE,
    example: { ...EXAMPLE_BIKE, ...EXAMPLE_PATCH },
  },
  meanings: { 400: 'A field has the wrong type, or the JSON is malformed. Nothing changes.' },
  async handle(ctx, { body }, { id, conditions }, { onPrimary, tags }) {
    sendWritten(
      ctx,
      tags,
      (await writing(`/bikes/${id}`, onPrimary.patch(callerOf(ctx), id, body, conditions))) ?? notFound(),
    );
  },
});

export const deleteBike = operation({
  method: 'delete',
  path: '/bikes/:id',
  summary: 'Delete a bike',
  scope: 'bikes:delete',
  limit: 'writes',
  input: NO_INPUT,
  // A missing bike is 404 (its statement matches nothing), whatever the preconditions.
  mustExist: true,
  preconditions: true,
  ok: { description: 'The id of the deleted bike', schema: ref('DeletedBike'), example: { id: EXAMPLE_BIKE.id } },
  async handle(ctx, _input, { id, conditions }, { onPrimary }) {
    const deleted = await writing(`/bikes/${id}`, onPrimary.delete(callerOf(ctx), id, conditions));
    if (deleted === PRECONDITION_FAILED) throw new HttpError(412);
    if (!deleted) notFound();
    ctx.body = { id };
  },
});
