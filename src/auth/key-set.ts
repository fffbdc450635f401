import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { assertOnlyUsCanChange } from '../postgres/safe-files';
import { uidOfServerEnd } from '../socket-owner';

/**
 * Where the identity provider's key set is read from, and how it is trusted
 * (docs/reference/callers.md#who-may-write): a file only root (or we) can change, an https:// URL, or an
 * http:// URL on this machine whose listener is proved to run as a user we trust: root, ourselves,
 * or JWT_JWKS_OWNER. Whatever is read is bounded: a set larger than MAX_KEY_SET_BYTES is refused,
 * as one that does not answer is.
 */
export type KeySetSource =
  | { file: string }
  | {
      url: URL;
      /** For http:// (loopback): the uids that may hold its listener. */
      owners: readonly number[];
    };

/** The largest key set read: a provider's lists a few keys of about 1 KB each. */
const MAX_KEY_SET_BYTES = 1024 * 1024;

/** What jose's remote key set fetches with (its `customFetch`): the set, as a Response. */
export type KeySetFetch = (url: string, init: { signal?: AbortSignal; headers?: Headers }) => Promise<Response>;

const tooLarge = () => new Error(`the key set is larger than ${MAX_KEY_SET_BYTES} bytes`);

/**
 * The key set in `file`: read as root reads a file another could have placed, never through a
 * path another user could change, without following a link or blocking on a fifo, owned by root
 * or us and writable by no one else.
 */
function readKeySetFile(file: string): Buffer {
  assertOnlyUsCanChange(path.dirname(file), "JWT_JWKS_FILE's directory");
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  try {
    const stat = fs.fstatSync(fd);
    const uid = process.getuid?.() ?? 0;
    if (!stat.isFile()) throw new Error(`${file} is not a regular file`);
    if (stat.uid !== 0 && stat.uid !== uid) throw new Error(`${file} belongs to user ${stat.uid}`);
    if ((stat.gid !== 0 && stat.mode & 0o020) || stat.mode & 0o002) throw new Error(`others may write to ${file}`);
    if (stat.size > MAX_KEY_SET_BYTES) throw tooLarge();
    const buffer = Buffer.alloc(MAX_KEY_SET_BYTES + 1);
    const length = fs.readSync(fd, buffer, 0, buffer.length, 0);
    if (length > MAX_KEY_SET_BYTES) throw tooLarge();
    return buffer.subarray(0, length);
  } finally {
    fs.closeSync(fd);
  }
}

/** Why the listener at the other end of `socket` is not one we trust; undefined when it is. */
function unprovedBecause(socket: net.Socket, owners: readonly number[]): string | undefined {
  const owner = uidOfServerEnd(socket);
  if (owner === undefined) return "the key set's listener is not listed in /proc/net/tcp";
  return owners.includes(owner)
    ? undefined
    : `the key set's listener belongs to user ${owner}, not to ${owners.join(' or ')}`;
}

/**
 * GET `url`, its body read up to MAX_KEY_SET_BYTES (a larger one is refused by its Content-Length
 * or as it comes). Over http:// (loopback only, config.ts), the listener's owner is proved once
 * the connection is made, before an answer is read: another local user who took the port while
 * the provider was away is refused.
 */
function fetchBounded(url: URL, owners: readonly number[], init: Parameters<KeySetFetch>[1]): Promise<Response> {
  const plain = url.protocol === 'http:';
  return new Promise((resolve, reject) => {
    let proven = !plain;
    const request = (plain ? http : https).request(url, {
      method: 'GET',
      headers: Object.fromEntries(init.headers ?? []),
      signal: init.signal,
      agent: false,
      // The proof reads /proc/net/tcp, IPv4's: `localhost` is 127.0.0.1.
      ...(plain ? { family: 4 } : {}),
    });
    request.on('error', reject);
    if (plain) {
      request.on('socket', (socket) =>
        socket.once('connect', () => {
          const why = unprovedBecause(socket, owners);
          if (why) request.destroy(new Error(why));
          else proven = true;
        }),
      );
    }
    request.on('response', (response) => {
      const fail = (err: Error) => {
        response.destroy();
        reject(err);
      };
      if (!proven) return fail(new Error("the key set's listener was not proved"));
      if (Number(response.headers['content-length'] ?? 0) > MAX_KEY_SET_BYTES) return fail(tooLarge());
      const chunks: Buffer[] = [];
      let length = 0;
      response.on('data', (chunk: Buffer) => {
        length += chunk.length;
        if (length > MAX_KEY_SET_BYTES) fail(tooLarge());
        else chunks.push(chunk);
      });
      response.on('error', reject);
      response.on('end', () => resolve(new Response(Buffer.concat(chunks), { status: response.statusCode ?? 500 })));
    });
    request.end();
  });
}

/** The key set's address for jose (a file's as a file: URL), and how jose fetches it from there. */
export function keySetOf(source: KeySetSource): { url: URL; fetch: KeySetFetch } {
  if ('file' in source) {
    return {
      url: pathToFileURL(source.file),
      fetch: async () => new Response(readKeySetFile(source.file), { status: 200 }),
    };
  }
  return { url: source.url, fetch: (_url, init) => fetchBounded(source.url, source.owners, init) };
}
