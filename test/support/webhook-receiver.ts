import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** A message a receiver verified: its headers' id and its body. */
interface Received {
  webhookId: string;
  body: { type: string; timestamp: string; data: { id: string } & Record<string, unknown>; cursor: string };
}

/** How a path of the receiver answers an attempt it verified. */
type Behaviour = (attempt: { webhookId: string; attempts: number }) => 'ok' | 'fail' | 'hang';

export interface Receiver {
  url(path: string): string;
  /** Verifies what comes to `path` with any of `secrets`, and answers as `behaviour` says. */
  route(path: string, secrets: string[], behaviour: Behaviour): void;
  /** Messages verified and answered 2xx on `path`, by webhook-id (a message delivered twice is there once). */
  delivered(path: string): Map<string, Received>;
  /** How many verified requests came to `path` for `webhookId`. */
  attempts(path: string, webhookId: string): number;
  /** Requests that failed verification, on any path. */
  unverified(): number;
  close(): Promise<void>;
}

/**
 * A real receiver, as a shop would run one: node:http, every message verified with the
 * standardwebhooks library (the signature, and a timestamp within its tolerance), then answered
 * as the test says: 2xx, a 500, or never (a hang, which the sender must give up on).
 */
export async function startReceiver(): Promise<Receiver> {
  const routes = new Map<
    string,
    { secrets: string[]; behaviour: Behaviour; attempts: Map<string, number>; delivered: Map<string, Received> }
  >();
  let unverified = 0;
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const route = routes.get(req.url ?? '');
      // No receiver there (the tests' conformance check asks every server for /openapi.json: none here).
      if (!route) {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(
        ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [name, String(req.headers[name])]),
      );
      const verified = route.secrets.some((secret) => {
        try {
          new Webhook(secret).verify(body, headers);
          return true;
        } catch {
          return false;
        }
      });
      if (!verified) {
        unverified++;
        res.writeHead(400).end();
        return;
      }
      const webhookId = headers['webhook-id'];
      const attempts = (route.attempts.get(webhookId) ?? 0) + 1;
      route.attempts.set(webhookId, attempts);
      const answer = route.behaviour({ webhookId, attempts });
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      if (answer === 'fail') {
        res.writeHead(500).end('try again');
        return;
      }
      route.delivered.set(webhookId, { webhookId, body: JSON.parse(body) as Received['body'] });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    route(path, secrets, behaviour) {
      const known = routes.get(path);
      routes.set(path, {
        secrets,
        behaviour,
        attempts: known?.attempts ?? new Map(),
        delivered: known?.delivered ?? new Map(),
      });
    },
    delivered: (path) => routes.get(path)?.delivered ?? new Map(),
    attempts: (path, webhookId) => routes.get(path)?.attempts.get(webhookId) ?? 0,
    unverified: () => unverified,
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
