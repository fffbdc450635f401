import net from 'node:net';
import type Koa from 'koa';

/**
 * Who a request counts as, for every per-client limit (the abuse limits, the event streams at once:
 * limits.ts): its address, as docs/decisions.md#trusted-proxies says. Behind TRUST_PROXY=<n>, the
 * entry of X-Forwarded-For the outermost of our proxies appended; one that is not an address was
 * not appended by a proxy of ours (a client that reaches the port directly and sent it), so the
 * client is the nearest hop that is one (the next entry, or the connection's peer). An IPv6 client
 * is its /64, the least a host is given (RFC 6177), so that one host is not many clients; an
 * IPv4-mapped IPv6 address is its IPv4 one.
 */
export function clientOf(ctx: Koa.Context): string {
  const hop = [...ctx.ips, ctx.socket.remoteAddress ?? ''].map(withoutZone).find((entry) => net.isIP(entry) !== 0);
  return hop === undefined ? '' : clientKey(hop);
}

/** `fe80::1%eth0` is `fe80::1`. */
const withoutZone = (entry: string) => entry.trim().replace(/%.*$/, '');

const MAPPED_IPV4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

/** An address as a client: an IPv4 address as it is, an IPv6 one as its /64. */
export function clientKey(address: string): string {
  const mapped = MAPPED_IPV4.exec(address);
  if (mapped) return mapped[1];
  if (net.isIPv4(address)) return address;
  return `${groupsOf(address).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, each as a number written in lowercase hex. */
function groupsOf(address: string): string[] {
  const [head, tail] = address.toLowerCase().split('::');
  const part = (text: string | undefined) =>
    (text ? text.split(':') : []).flatMap((group) => {
      if (!group.includes('.')) return [parseInt(group, 16).toString(16)];
      // An IPv4 address written at the end: its two groups.
      const [a, b, c, d] = group.split('.').map(Number);
      return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
    });
  const left = part(head);
  const right = part(tail);
  return tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
}
