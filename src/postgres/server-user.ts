import { execFileSync, spawnSync, type SpawnOptions } from 'node:child_process';

/**
 * The system user an embedded PostgreSQL runs as when the service runs as root (PostgreSQL
 * refuses root). It is a user of our own, never the `postgres` account of a system PostgreSQL:
 * whoever can act as that shared account (any superuser of any of its clusters, through
 * `COPY ... TO PROGRAM`) must not be able to touch our clusters, nor we theirs.
 */
export const SERVER_USER_NAME = 'bike-catalog';

export type ServerUser = { uid: number; gid: number };

function idOf(flag: '-u' | '-g'): number {
  return Number(execFileSync('id', [flag, SERVER_USER_NAME], { stdio: 'pipe' }).toString().trim());
}

/** As root: the server user, made if missing. Otherwise undefined: the server runs as ourselves. */
export function serverUser(): ServerUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    return { uid: idOf('-u'), gid: idOf('-g') };
  } catch {
    try {
      execFileSync(
        'useradd',
        [
          '--system',
          '--user-group',
          '--no-create-home',
          '--home-dir',
          '/nonexistent',
          '--shell',
          '/usr/sbin/nologin',
        ].concat(SERVER_USER_NAME),
        { stdio: 'pipe' },
      );
      return { uid: idOf('-u'), gid: idOf('-g') };
    } catch (err) {
      const reason = String((err as { stderr?: Buffer }).stderr ?? (err as Error).message)
        .trim()
        .split('\n')[0];
      throw new Error(
        `PostgreSQL refuses root, and no "${SERVER_USER_NAME}" user to run it as could be made (${reason})`,
        {
          cause: err,
        },
      );
    }
  }
}

/**
 * Options for a child process of the server's: as the server user (libuv drops the supplementary
 * groups too), with an environment of its own, so no secret of the service's (JWT_SECRET,
 * DATABASE_*) reaches a process of another user.
 */
export function asServerUser(user: ServerUser | undefined): Pick<SpawnOptions, 'uid' | 'gid' | 'env'> {
  return { ...user, env: { LC_ALL: 'C', PATH: '/usr/bin:/bin' } };
}

/** Whether `user` may search `target` (and so every directory above it), as the server will. */
export function canReach(user: ServerUser, target: string): boolean {
  return spawnSync('test', ['-x', target], { ...asServerUser(user), stdio: 'ignore' }).status === 0;
}
