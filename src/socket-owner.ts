import fs from 'node:fs';
import type net from 'node:net';
import os from 'node:os';

/**
 * Who holds the other end of a TCP connection on this machine (IPv4): on Linux, /proc/net/tcp
 * lists each socket with the uid that created it, and a socket accepted by a listener carries the
 * listener's. What proves a server on the loopback interface is the one we meant, not another
 * local user's who took its port while it was away (docs/running-as-root.md#proving-a-server-is-ours,
 * docs/reference/callers.md#who-may-write).
 */

/** /proc/net/tcp's form of an IPv4 address and port: the address as a native-endian word, both in hex. */
function procNetAddress(address: string, port: number): string {
  const bytes = Buffer.from(address.split('.').map(Number));
  const word = os.endianness() === 'LE' ? bytes.readUInt32LE() : bytes.readUInt32BE();
  const hex = (value: number, digits: number) => value.toString(16).toUpperCase().padStart(digits, '0');
  return `${hex(word, 8)}:${hex(port, 4)}`;
}

/** The uid that made the server's end of this TCP connection (IPv4), or undefined when it is not listed. */
export function uidOfServerEnd(socket: net.Socket): number | undefined {
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
