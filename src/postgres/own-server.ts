import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { Client, type ClientConfig } from 'pg';

/**
 * Connections to the embedded server give its passwords only to a server proved to be ours
 * (docs/running-as-root.md#proving-a-server-is-ours). A port named by a stale postmaster.pid, or the
 * one we are about to start on, may meanwhile be held by another local user, who would be
 * answered with the cluster's superuser password.
 *
 * 1. The server side of the very connection was made by the user who runs our cluster: on Linux,
 *    /proc/net/tcp lists each socket with the uid that created it, and a socket accepted by a
 *    listener carries the listener's. Checked when the server first asks us to authenticate,
 *    before anything secret is sent, so no other listener can slip in between check and use.
 * 2. SCRAM-SHA-256 only, finished: our cluster is made with --auth=scram-sha-256. A request for
 *    the password in clear or as MD5 is refused, and a server that lets us in without SCRAM's
 *    final message (whose signature pg checks: it needs our verifier) is too.
 */

/** /proc/net/tcp's form of an IPv4 address and port: the address as a native-endian word, both in hex. */
function procNetAddress(address: string, port: number): string {
  const bytes = Buffer.from(address.split('.').map(Number));
  const word = os.endianness() === 'LE' ? bytes.readUInt32LE() : bytes.readUInt32BE();
  const hex = (value: number, digits: number) => value.toString(16).toUpperCase().padStart(digits, '0');
  return `${hex(word, 8)}:${hex(port, 4)}`;
}

/** The uid that made the server's end of this TCP connection (IPv4), or undefined when it is not listed. */
function uidOfServerEnd(socket: net.Socket): number | undefined {
  const { localAddress, localPort, remoteAddress, remotePort } = socket;
  if (!localAddress || !localPort || !remoteAddress || !remotePort) return undefined;
  // The server's end has our remote address as its local one, and ours as its remote one.
  const serverEnd = `${procNetAddress(remoteAddress, remotePort)} ${procNetAddress(localAddress, localPort)}`;
  for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n')) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
    const fields = line.trim().split(/\s+/);
    if (`${fields[1]} ${fields[2]}` === serverEnd) return Number(fields[7]);
  }
  return undefined;
}

/** Why this connection's server cannot be proved to run as `uid`; undefined when it is proved. */
function unprovedBecause(stream: unknown, uid: number | undefined): string | undefined {
  // Elsewhere there is no /proc/net/tcp (nor, on Windows, a uid): SCRAM alone keeps the password.
  if (process.platform !== 'linux' || uid === undefined) return undefined;
  if (!(stream instanceof net.Socket)) return 'it is not a TCP connection';
  const owner = uidOfServerEnd(stream);
  if (owner === undefined) return 'its end of the connection is not listed in /proc/net/tcp';
  return owner === uid ? undefined : `its end of the connection belongs to user ${owner}, not ${uid}`;
}

/** Ends the connection before anything more is sent on it; connect() fails with `why`. */
function refuse(client: Client, why: string): void {
  client.connection.stream.destroy(
    new Error(`refused to authenticate to the server on ${client.host}:${client.port}: ${why}`),
  );
}

/**
 * The pg Client class to reach a server of ours run by `uid` with: for every connection to the
 * embedded server (its superuser's, the pool's, the migrations'). Its config is pg's own.
 */
export function clientOfServerRunBy(uid: number | undefined): typeof Client {
  return class OwnServerClient extends Client {
    constructor(config?: string | ClientConfig) {
      super(config);
      let serverSigned = false;
      // Added before connect() adds pg's own handlers, so these run first: pg's answer to a
      // refused server goes to a closed stream.
      this.connection.on('authenticationSASL', () => {
        const why = unprovedBecause(this.connection.stream, uid);
        if (why) refuse(this, why);
      });
      // pg checks the signature in it next; when it is wrong, pg reports an error of the
      // connection but leaves it open, which the listener below closes.
      this.connection.on('authenticationSASLFinal', () => (serverSigned = true));
      this.connection.on('error', () => this.connection.stream.destroy());
      this.connection.on('authenticationOk', () => {
        if (!serverSigned) refuse(this, 'it let us in without finishing SCRAM-SHA-256');
      });
    }

    // pg answers these two requests in methods of these names (node_modules/pg/lib/client.js),
    // with the password in clear or as an MD5 hash of it (which a server could relay to ours); no
    // option turns them off, so this class replaces them: such a server gets nothing.
    _handleAuthCleartextPassword(): void {
      refuse(this, 'it asked for the password in clear');
    }

    _handleAuthMD5Password(): void {
      refuse(this, 'it asked for an MD5 hash of the password');
    }
  };
}
