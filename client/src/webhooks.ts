import type { Bike } from './types.ts';

/**
 * A receiver's check of a webhook (docs/webhooks.md), as the Standard Webhooks
 * specification says and its libraries do it: the HMAC-SHA256 of `id.timestamp.body` under the
 * subscription's secret (`whsec_...`) must be one of the `v1,` signatures of `webhook-signature`
 * (several, space-separated, while a rotated secret still signs), and `webhook-timestamp` within
 * five minutes of now. Over WebCrypto, so the same in browsers and Node.js; test/client checks it
 * against the standardwebhooks library.
 */

/** A webhook's body: a change of the catalog, with the feed's cursor after it. */
export type WebhookEvent =
  | { type: 'bike.created' | 'bike.updated'; timestamp: string; data: Bike; cursor: string }
  | { type: 'bike.deleted'; timestamp: string; data: { id: string }; cursor: string };

/** The message is not one the secret signed, or is too old (or too far ahead) to be taken. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

/** How far a webhook-timestamp may be from now, either way. */
const TOLERANCE_SECONDS = 5 * 60;

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const value = record[name] ?? Object.entries(record).find(([key]) => key.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? value.join(', ') : value;
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
  try {
    return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/**
 * The event, once `body` (the request's bytes, exactly as they came) is proved to be signed with
 * `secret`; WebhookVerificationError otherwise. Deduplicate by `webhook-id`, order by `cursor`.
 */
export async function verifyWebhook(
  secret: string,
  headers: HeaderSource,
  body: string | Uint8Array,
  now: Date = new Date(),
): Promise<WebhookEvent> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures)
    throw new WebhookVerificationError('missing webhook-id, -timestamp or -signature');
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('webhook-timestamp is not a number of seconds');
  if (Math.abs(now.getTime() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) {
    throw new WebhookVerificationError('webhook-timestamp is too far from now');
  }
  const keyBytes = fromBase64(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
  if (!keyBytes) throw new WebhookVerificationError('the secret is not whsec_ and base64');
  const key = await crypto.subtle.importKey('raw', keyBytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  const signed = new TextEncoder().encode(`${id}.${timestamp}.${text}`);
  for (const signature of signatures.split(' ')) {
    const [version, value] = signature.split(',');
    const mac = version === 'v1' && value ? fromBase64(value) : undefined;
    // crypto.subtle.verify compares in constant time.
    if (mac && (await crypto.subtle.verify('HMAC', key, mac, signed))) return JSON.parse(text) as WebhookEvent;
  }
  throw new WebhookVerificationError('no signature matches');
}
