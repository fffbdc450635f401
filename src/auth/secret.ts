import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { loadOrCreateSecretFile } from '../secret-file';

/** The shortest signing secret accepted: HS256 wants a key at least as long as its 256-bit hash. */
export const MIN_SECRET_BYTES = 32;
/** Fewer different characters than this is a placeholder ("aaaa..."), not a secret; random hex has 16. */
export const MIN_SECRET_DISTINCT_CHARACTERS = 8;

const secretFileIn = (dataDir: string) => path.join(dataDir, 'jwt-secret');

function usable(file: string, secret: string): string {
  if (Buffer.byteLength(secret) < MIN_SECRET_BYTES) {
    throw new Error(`${file} does not hold a usable secret; delete it to have a new one made`);
  }
  return secret;
}

/**
 * The signing secret of a service on its embedded database when JWT_SECRET is unset: 256 random
 * bits created once in the data directory, readable by the owner only, reused after restarts
 * so tokens stay valid.
 */
export function loadOrCreateSecret(dataDir: string): string {
  const file = secretFileIn(dataDir);
  return usable(
    file,
    loadOrCreateSecretFile(file, () => randomBytes(32).toString('base64url')),
  );
}

/**
 * The secret loadOrCreateSecret made, for `npm run token`, which signs with the service's secret
 * and never makes one: a token signed with a secret no service has would be refused.
 */
export function readSecret(dataDir: string): string {
  const file = secretFileIn(dataDir);
  let secret: string;
  try {
    secret = fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') throw new Error(`cannot read ${file} (${code})`, { cause: err });
    throw new Error(`${file} does not exist: start the service once (npm start) to make it, or set JWT_SECRET`, {
      cause: err,
    });
  }
  return usable(file, secret);
}
