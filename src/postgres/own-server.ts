import net from 'node:net';
import type { Client, ClientConfig } from 'pg';
import { GuardedClient, UnusableServerError } from '../pg-client';
import { uidOfServerEnd } from '../socket-owner';

/**
 * Connections to the embedded server give its passwords only to a server proved to be ours
 * (docs/running-as-root.md#proving-a-server-is-ours). A port named by a stale postmaster.pid, or the
 * one we are about to start on, may meanwhile be held by another local user, who would be
 * answered with the cluster's superuser password.
 *
 * 1. The server side of the very connection was made by the user who runs our cluster
 *    (uidOfServerEnd, src/socket-owner.ts). Checked when the server first asks us to authenticate,
 *    before anything secret is sent, so no other listener can slip in between check and use.
 * 2. SCRAM-SHA-256 only, finished: our cluster is made with --auth=scram-sha-256. A request for
 *    the password in clear or as MD5 is refused, and so is a server that lets us in without
 *    SCRAM's final message (whose signature pg checks: it needs our verifier), or says anything
 *    else first: an error, or "ready" without asking us to authenticate at all.
 */

/** Why this connection's server cannot be proved to run as `uid`; undefined when it is proved. */
function unprovedBecause(stream: unknown, uid: number | undefined): string | undefined {
  // Elsewhere there is no /proc/net/tcp (nor, on Windows, a uid): SCRAM alone keeps the password.
  if (process.platform !== 'linux' || uid === undefined) return undefined;
  if (!(stream instanceof net.Socket)) return 'it is not a TCP connection';
  const owner = uidOfServerEnd(stream);
  if (owner === undefined) return 'its end of the connection is not listed in /proc/net/tcp';
  return owner === uid ? undefined : `its end of the connection belongs to user ${owner}, not ${uid}`;
}

/** Where a connection to a server not yet proved ours stands. */
type Stage = 'startup' | 'scram' | 'signed' | 'proved' | 'refused';

/** Why a message that is not the next step of SCRAM-SHA-256 refuses the server that sent it. */
function refusalOf(message: { name: string; message?: string }): string {
  switch (message.name) {
    case 'authenticationCleartextPassword':
      return 'it asked for the password in clear';
    case 'authenticationMD5Password':
      return 'it asked for an MD5 hash of the password';
    case 'authenticationOk':
      return 'it let us in without finishing SCRAM-SHA-256';
    case 'error':
      return `it answered with an error (${message.message})`;
    default:
      return `it sent ${message.name} before it was proved ours`;
  }
}

/**
 * The pg Client class to reach a server of ours run by `uid` with: for every connection to the
 * embedded server (its superuser's, the pool's, the migrations'). Its config is pg's own.
 *
 * Until the server is proved ours, the only messages it may send are SCRAM-SHA-256's, in order,
 * then "authentication ok"; anything else refuses it: a request for the password in clear or as
 * an MD5 hash (which it could relay to our own server), another method, an error, "ready" without
 * authenticating at all, or a final message whose signature pg finds wrong.
 */
export function clientOfServerRunBy(uid: number | undefined): typeof Client {
  return class OwnServerClient extends GuardedClient {
    constructor(config?: string | ClientConfig) {
      super(config);
      let stage: Stage = 'startup';
      const refuse = (why: string) => {
        stage = 'refused';
        return new UnusableServerError(`refused to authenticate to the server on ${this.host}:${this.port}: ${why}`);
      };
      // pg emits each message as 'message' before its own listeners hear it by name: one this
      // throws on, pg never acts on, and the connection closes with the error (GuardedClient)
      // before anything more is sent.
      const vet = (message: { name: string; message?: string }) => {
        switch (`${stage} ${message.name}`) {
          case 'startup authenticationSASL': {
            const why = unprovedBecause(this.connection.stream, uid);
            if (why) throw refuse(why);
            stage = 'scram';
            return;
          }
          case 'scram authenticationSASLContinue':
            return;
          case 'scram authenticationSASLFinal':
            stage = 'signed';
            return;
          case 'signed authenticationOk':
            stage = 'proved';
            this.connection.removeListener('message', vet);
            return;
        }
        throw refuse(refusalOf(message));
      };
      this.connection.on('message', vet);
      // pg reports a wrong signature in SCRAM's final message as an error of the connection, but
      // leaves it open.
      this.connection.on('error', () => {
        if (stage !== 'proved') stage = 'refused';
        this.connection.stream.destroy();
      });
    }
  };
}
