import { Webhook } from 'standardwebhooks';
import { verifyWebhook, WebhookVerificationError } from '../../client/src/index.ts';
import { newSecret, signedHeaders } from '../../src/webhooks/events';

/**
 * The client's verifyWebhook (client/src/webhooks.ts, over WebCrypto) and the standardwebhooks
 * library agree on every message: what the service signs, what the library signs, and what either
 * must refuse (docs/webhooks.md#verify-every-message).
 */
describe('verifyWebhook, against the standardwebhooks library', () => {
  const body = JSON.stringify({
    type: 'bike.deleted',
    timestamp: '2026-12-01T00:00:00.000Z',
    data: { id: 'x' },
    cursor: 'c',
  });
  const secret = newSecret();

  /** What the library says of a message: the body it verified, or the error it threw. */
  const library = (key: string, headers: Record<string, string>, text: string) => {
    try {
      new Webhook(key).verify(text, headers);
      return 'verified';
    } catch {
      return 'refused';
    }
  };
  const ours = async (key: string, headers: Record<string, string>, text: string) => {
    try {
      await verifyWebhook(key, headers, text);
      return 'verified';
    } catch (err) {
      expect(err).toBeInstanceOf(WebhookVerificationError);
      return 'refused';
    }
  };

  it('when the service signed it, both verify it and it gives the event', async () => {
    const headers = signedHeaders([secret], 'msg_1_2', body);
    expect(library(secret, headers, body)).toBe('verified');
    expect(await verifyWebhook(secret, headers, body)).toEqual(JSON.parse(body));
    expect(await verifyWebhook(secret, new Headers(headers), new TextEncoder().encode(body))).toEqual(JSON.parse(body));
  });

  it('when the library signed it, ours verifies it', async () => {
    const now = new Date();
    const headers = {
      'webhook-id': 'msg_x',
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign('msg_x', now, body),
    };
    expect(await ours(secret, headers, body)).toBe('verified');
  });

  it('after a rotation, signed with both secrets, either secret verifies it, with both libraries', async () => {
    const next = newSecret();
    const headers = signedHeaders([next, secret], 'msg_1_3', body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const key of [secret, next]) {
      expect(library(key, headers, body)).toBe('verified');
      expect(await ours(key, headers, body)).toBe('verified');
    }
  });

  it('when the body, the id or the secret differ, or the timestamp is old, both refuse it', async () => {
    const headers = signedHeaders([secret], 'msg_1_4', body);
    const old = signedHeaders([secret], 'msg_1_4', body, new Date(Date.now() - 10 * 60 * 1000));
    const cases: [string, Record<string, string>, string][] = [
      [secret, headers, body.replace('"x"', '"y"')],
      [secret, { ...headers, 'webhook-id': 'msg_other' }, body],
      [newSecret(), headers, body],
      [secret, old, body],
      [secret, { ...headers, 'webhook-signature': headers['webhook-signature'].replace('v1,', 'v2,') }, body],
    ];
    for (const [key, given, text] of cases) {
      expect(library(key, given, text)).toBe('refused');
      expect(await ours(key, given, text)).toBe('refused');
    }
  });
});
