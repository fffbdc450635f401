import http from 'node:http';
import https from 'node:https';

/**
 * One attempt to deliver (docs/webhooks.md#deduplicate-order-answer-fast): a POST to the receiver,
 * which must answer 2xx within ATTEMPT_TIMEOUT_MS. A redirect is an answer like any other that is
 * not 2xx (never followed); of the answer's body at most MAX_ANSWER_BYTES are read, then the
 * connection is dropped. Whatever the receiver does (hang, reset, send garbage), the attempt
 * settles with an outcome and never throws.
 */

/** The most an attempt waits for the whole answer. */
const ATTEMPT_TIMEOUT_MS = 5_000;
/** What is read of an answer's body (kept for `deliveries`, to say why an attempt failed). */
const MAX_ANSWER_BYTES = 1024;

export interface Outcome {
  /** The receiver's status; undefined when none came. */
  status?: number;
  /** Why the attempt failed (or a 2xx's body start, nothing). */
  error?: string;
  retryAfter?: string;
  ok: boolean;
}

/** Keeps connections open between attempts to the same receiver: a subscription's changes go one after another. */
const agents = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) };

/** A URL a subscription may have: http or https, nothing else (no credentials in it either, as they would be logged). */
export function checkUrl(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'not a URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be http or https';
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';
  return undefined;
}

export function send(url: string, headers: Record<string, string>, body: string): Promise<Outcome> {
  return new Promise<Outcome>((resolve) => {
    let settled = false;
    /** An answer read to its end leaves the connection to the agent; any other is dropped. */
    const settle = (outcome: Outcome, ended = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (!ended) request.destroy();
      resolve(outcome);
    };
    const target = new URL(url);
    const protocol = target.protocol === 'https:' ? 'https:' : 'http:';
    const request = (protocol === 'https:' ? https : http).request(target, {
      method: 'POST',
      agent: agents[protocol],
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'bike-catalog-webhooks' },
    });
    const timer = setTimeout(
      () => settle({ ok: false, error: `no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s` }),
      ATTEMPT_TIMEOUT_MS,
    );
    request.on('error', (err) => settle({ ok: false, error: err.message }));
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      const retryAfter = response.headers['retry-after'];
      const ok = status >= 200 && status < 300;
      let read = '';
      response.on('error', () => undefined);
      response.on('data', (chunk: Buffer) => {
        read += chunk.toString('utf8', 0, Math.max(0, MAX_ANSWER_BYTES - read.length));
        if (read.length >= MAX_ANSWER_BYTES) finish(false);
      });
      response.on('end', () => finish(true));
      const finish = (ended: boolean) =>
        settle(
          {
            ok,
            status,
            retryAfter,
            ...(!ok && { error: `answered ${status}${read ? `: ${read.slice(0, 200)}` : ''}` }),
          },
          ended,
        );
    });
    request.end(body);
  });
}
