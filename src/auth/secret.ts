import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { loadOrCreateSecretFile } from '../secret-file';

/** The shortest signing secret accepted: HS256 wants a key at least as long as its 256-bit hash. */
export const MIN_SECRET_BYTES = 32;
/** Fewer different characters than this is a placeholder ("aaaa..."), not a secret; random hex has 16. */
export const MIN_SECRET_DISTINCT_CHARACTERS = 8;

/**
 * The signing secret of a service on its embedded database when JWT_SECRET is unset: 256 random
 * bits created once in the data directory, readable by the owner only, reused after restarts
 * so tokens stay valid.
 */
export function loadOrCreateSecret(dataDir: string): string {
  const file = path.join(dataDir, 'jwt-secret');
  const secret = loadOrCreateSecretFile(file, () => randomBytes(32).toString('base64url'));
  if (Buffer.byteLength(secret) < MIN_SECRET_BYTES) {
    throw new Error(`${file} does not hold a usable secret; delete it to have a new one made`);
  }
  return secret;
}
