import * as yup from 'yup';
import { hashOfKey, isApiKey } from '../auth/api-keys';
import { TokenRefused } from '../auth/refusal';
import { scopesAmong } from '../auth/scopes';
import { issuanceClosed, tokenRefusal } from '../http/endpoint';
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

/** What a closed POST /api/user answers a request without an API key, in its plain-text reason. */
const ISSUANCE_CLOSED =
  'token issuance is closed (TOKEN_ISSUANCE=closed): send an API key as the bearer token, or use a token of the operator or the identity provider';

export const issueToken = operation({
  method: 'post',
  path: '/api/user',
  summary: 'Get a bearer token',
  description:
    'No authentication. The token is an HS256 JWT carrying `username`, `iat`, `exp` and `jti` (unique to it), ' +
    'valid for 1800 seconds. With an API key as the bearer token (`Authorization: Bearer bk_live_...`, from the ' +
    "operator's `npm run keys`), the token is the key's: it carries the key's label and scopes, in either mode, " +
    'and stops working once the key is revoked. Where the operator has closed issuance (`TOKEN_ISSUANCE=closed`), ' +
    'a request without a key is 403: tokens then come from API keys, the operator or the identity provider.',
  limit: 'tokens',
  input: inputOf({ body: tokenRequest }),
  invalid: 400,
  requestHeaders: ['Authorization'],
  requestBody: {
    name: 'TokenRequest',
    description: "Who the token is for (ignored with an API key: the token is the key's).",
    example: { username: 'alice' },
    required: false,
    mediaTypes: ['application/json', 'application/x-www-form-urlencoded'],
  },
  ok: { description: 'A token', schema: ref('Token'), example: { token: EXAMPLE_TOKEN } },
  alsoAnswers: [403],
  meanings: {
    400: '`username` is present but not a string, or the JSON is malformed.',
    403:
      'Token issuance is closed (`TOKEN_ISSUANCE=closed`) and no API key was sent: no token is given here, to anyone ' +
      'without one; or the API key sent is not known, was revoked or has expired (`error="invalid_token"`).',
  },
  // Any string will do: the username is only signed into the token, never stored, so even
  // U+0000 or a lone surrogate travels (JSON-escaped) and reads back as sent.
  async handle(ctx, { body }, _request, { tokens, keys }) {
    const bearer = ctx.get('Authorization').split(' ')[1];
    // An API key is traded for a token of its own, in either mode (docs/reference/callers.md#api-keys).
    if (bearer !== undefined && isApiKey(bearer)) {
      const grant = await keys.use(hashOfKey(bearer));
      if (!grant) throw tokenRefusal(new TokenRefused('unknown-key'));
      ctx.body = { token: tokens.issueForKey({ ...grant, scopes: scopesAmong(grant.scopes) }) };
      return;
    }
    // TOKEN_ISSUANCE=closed: tokens come from keys, the operator or the identity provider (docs/reference/callers.md#who-may-write).
    if (!tokens.issuanceOpen) throw issuanceClosed(ISSUANCE_CLOSED);
    ctx.body = { token: tokens.issue(body.username) };
  },
});
