/**
 * A strict parser of a Bearer challenge (RFC 6750 section 3, over RFC 9110 11.6.1's auth-param
 * syntax): `Bearer` then comma-separated `name="value"` parameters, each of realm, scope, error,
 * error_description and error_uri at most once, error one of RFC 6750's three codes, and each
 * value within the characters RFC 6750 allows it (no `"` or `\`: no escapes either). Anything
 * else throws, naming what is wrong.
 */
export interface BearerChallenge {
  realm?: string;
  scope?: string[];
  error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope';
  error_description?: string;
  error_uri?: string;
}

const ATTRIBUTES = new Set(['realm', 'scope', 'error', 'error_description', 'error_uri']);
const ERRORS = new Set(['invalid_request', 'invalid_token', 'insufficient_scope']);
/** %x20-21 / %x23-5B / %x5D-7E: error_description's and error_uri's characters. */
const NQSCHAR = /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/;
/** scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), scope = scope-token *( SP scope-token ). */
const SCOPE = /^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/;
/** error = 1*( %x20-21 / %x23-5B / %x5D-7E ) (and one of the codes). */
const PARAM = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*=[ \t]*"([^"\\]*)"/;

export function parseBearerChallenge(header: string | null): BearerChallenge {
  if (header === null) throw new Error('no WWW-Authenticate header');
  if (!/^Bearer( |$)/.test(header)) throw new Error(`not a Bearer challenge: ${header}`);
  const challenge: Record<string, string> = {};
  let rest = header.slice('Bearer'.length);
  if (rest === '') return {};
  rest = rest.replace(/^ +/, '');
  for (;;) {
    const match = PARAM.exec(rest);
    if (!match) throw new Error(`not a name="value" parameter at: ${rest}`);
    const [whole, name, value] = match;
    if (!ATTRIBUTES.has(name)) throw new Error(`unknown attribute ${name}`);
    if (Object.hasOwn(challenge, name)) throw new Error(`${name} appears more than once`);
    challenge[name] = value;
    rest = rest.slice(whole.length);
    if (rest === '') break;
    const separator = /^[ \t]*,[ \t]*/.exec(rest);
    if (!separator) throw new Error(`expected a comma at: ${rest}`);
    rest = rest.slice(separator[0].length);
  }
  const { realm, scope, error, error_description: description, error_uri: uri } = challenge;
  if (error !== undefined && !ERRORS.has(error)) throw new Error(`error "${error}" is none of RFC 6750's codes`);
  if (description !== undefined && !NQSCHAR.test(description))
    throw new Error('error_description has a character RFC 6750 forbids');
  if (uri !== undefined && !NQSCHAR.test(uri)) throw new Error('error_uri has a character RFC 6750 forbids');
  if (scope !== undefined && !SCOPE.test(scope))
    throw new Error(`scope "${scope}" is not scope tokens separated by one space`);
  return {
    ...(realm !== undefined && { realm }),
    ...(scope !== undefined && { scope: scope.split(' ') }),
    ...(error !== undefined && { error: error as BearerChallenge['error'] }),
    ...(description !== undefined && { error_description: description }),
    ...(uri !== undefined && { error_uri: uri }),
  };
}
