import net from 'node:net';

/**
 * Which ways of authenticating a connection accepts from its server, before it sends anything
 * secret (docs/configuration.md#how-the-service-authenticates-to-postgresql): libpq's
 * `require_auth` (libpq 16), given in the connection string, with libpq's names. A server
 * asking another way is refused as an unusable server (503), the password never sent.
 */
const AUTH_METHODS = ['password', 'md5', 'scram-sha-256', 'none'] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

/** What a connection string's `require_auth` allows; undefined when it sets none. Throws on a value libpq would refuse. */
export function requireAuthOf(value: string | null): Set<AuthMethod> | undefined {
  if (value === null) return undefined;
  const items = value.split(',');
  const negated = items.filter((item) => item.startsWith('!'));
  if (negated.length > 0 && negated.length < items.length) {
    throw new Error(`require_auth cannot mix methods and negated ones ("!"): got "${value}"`);
  }
  const named = items.map((item) => item.replace(/^!/, ''));
  for (const name of named) {
    if (!(AUTH_METHODS as readonly string[]).includes(name)) {
      throw new Error(`require_auth names ${AUTH_METHODS.join(', ')} (or each with "!" before it), got "${name}"`);
    }
  }
  const methods = new Set(named as AuthMethod[]);
  return negated.length > 0 ? new Set(AUTH_METHODS.filter((method) => !methods.has(method))) : methods;
}

/** Whether `host` is this machine's loopback interface, where any local user may hold a port the server left. */
function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost') return true;
  if (net.isIPv4(bare)) return bare.startsWith('127.');
  return bare === '::1' || /^::ffff:127\./.test(bare);
}

/**
 * What a connection to `connectionString` accepts: its `require_auth`, or, with a password to a
 * loopback address, SCRAM-SHA-256 only (SCRAM's proof gives no one the password, and only a
 * server that holds the role's verifier can finish it); anything else, as libpq, every way.
 * A value that cannot be read allows nothing (readConfig has refused it already).
 */
export function acceptedAuth(
  connectionString: string | undefined,
  host: string | undefined,
  hasPassword: boolean,
): Set<AuthMethod> | undefined {
  let given: string | null = null;
  try {
    if (connectionString !== undefined) given = new URL(connectionString).searchParams.get('require_auth');
  } catch {
    // Not a URL (a socket directory, say): no require_auth in it.
  }
  try {
    const required = requireAuthOf(given);
    if (required) return required;
  } catch {
    return new Set();
  }
  return hasPassword && host !== undefined && isLoopback(host) ? new Set(['scram-sha-256']) : undefined;
}

/** pg's names of the server's requests to authenticate, and the method each is. */
const ASKED: Record<string, AuthMethod> = {
  authenticationCleartextPassword: 'password',
  authenticationMD5Password: 'md5',
  authenticationSASL: 'scram-sha-256',
};

const REFUSED: Record<AuthMethod, string> = {
  password: 'it asked for the password in clear',
  md5: 'it asked for an MD5 hash of the password',
  'scram-sha-256': 'it asked for SCRAM-SHA-256',
  none: 'it let us in without asking us to authenticate',
};

/**
 * A check of each message of the start-up phase against `accepted`: why the server is refused,
 * or undefined. A server that asked for SCRAM must finish it (its final message, whose signature
 * pg checks) before it lets us in.
 */
export function authenticationCheck(accepted: Set<AuthMethod>): (name: string) => string | undefined {
  let asked: AuthMethod | undefined;
  let finished = false;
  const allowed = [...accepted].join(', ') || 'nothing';
  const refuse = (method: AuthMethod) =>
    accepted.has(method) ? undefined : `${REFUSED[method]}, and require_auth allows ${allowed}`;
  return (name) => {
    if (name in ASKED) {
      asked = ASKED[name];
      return refuse(asked);
    }
    if (name === 'authenticationSASLFinal') finished = true;
    if (name === 'authenticationOk' || name === 'readyForQuery') {
      if (asked === undefined) return refuse('none');
      if (asked === 'scram-sha-256' && !finished) return 'it let us in without finishing SCRAM-SHA-256';
    }
    return undefined;
  };
}
