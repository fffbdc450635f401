import * as yup from 'yup';
import { HttpError } from '../http/errors';
import { inputOf, WRONG_TYPE } from '../http/schema';
import { ref } from './bike-json';
import { operation } from './operation';

/** POST /api/user: `username` is optional and any string (it is only signed into the token). */
const tokenRequest = yup
  .object({
    username: yup.string().typeError(WRONG_TYPE).strict().meta({ description: 'Carried in the token. Optional.' }),
  })
  .typeError(WRONG_TYPE)
  .strict()
  .defined();

// An illustration only: a token of this shape, signed with no real secret.
const EXAMPLE_TOKEN =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.' +
  'eyJ1c2VybmFtZSI6ImFsaWNlIiwiaWF0IjoxNzY0MDAwMDAwLCJleHAiOjE3NjQwMDE4MDAsImp0aSI6IjhKMW5CcTN2UzBtWWwybzRjWjV5U2cifQ.' +
  'c2lnbmF0dXJlLW9mLWFuLWV4YW1wbGUtdG9rZW4';

export const issueToken = operation({
  method: 'post',
  path: '/api/user',
  summary: 'Get a bearer token',
  description:
    'No authentication. The token is an HS256 JWT carrying `username`, `iat`, `exp` and `jti` (unique to it), ' +
    'valid for 1800 seconds. Where the operator has closed issuance (`TOKEN_ISSUANCE=closed`), 403: tokens ' +
    'then come from the operator or the identity provider.',
  limit: 'tokens',
  input: inputOf({ body: tokenRequest }),
  invalid: 400,
  requestBody: {
    name: 'TokenRequest',
    description: 'Who the token is for.',
    example: { username: 'alice' },
    required: false,
    mediaTypes: ['application/json', 'application/x-www-form-urlencoded'],
  },
  ok: { description: 'A token', schema: ref('Token'), example: { token: EXAMPLE_TOKEN } },
  alsoAnswers: [403],
  meanings: {
    400: '`username` is present but not a string, or the JSON is malformed.',
    403: 'Token issuance is closed (`TOKEN_ISSUANCE=closed`): no token is given here, to anyone.',
  },
  database: false,
  // Any string will do: the username is only signed into the token, never stored, so even
  // U+0000 or a lone surrogate travels (JSON-escaped) and reads back as sent.
  handle(ctx, { body }, _request, { tokens }) {
    // TOKEN_ISSUANCE=closed: tokens come from the operator or the identity provider (docs/decisions.md#who-may-write).
    if (!tokens.issuanceOpen) throw new HttpError(403);
    ctx.body = { token: tokens.issue(body.username) };
  },
});
