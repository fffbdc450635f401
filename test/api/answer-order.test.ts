import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { ANSWER_ORDER } from '../../src/http/endpoint';
import { newBike, useApi } from './helpers';

/**
 * The order of a write's answers (docs/reference/requests-and-answers.md#the-order-of-a-writes-answers): ANSWER_ORDER
 * in src/http/endpoint.ts states it, the endpoint follows it, the docs list it, and
 * `Expect: 100-continue` never changes the answer. Every write here carries an If-Match that
 * names no state of the bike, so a failed precondition is always one of the request's faults:
 * the answer is that of the fault whose check comes first.
 */

/**
 * One request on a connection of its own: the head, then the body (at once, or once `100
 * Continue` came when the client waits for it), and the status lines up to the first final one.
 */
function exchange(port: number, head: string, body: Buffer, waitsForContinue: boolean): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let statuses: string[] = [];
    const answered = () => statuses.some((status) => !status.startsWith('1'));
    const socket = net.connect(port, '127.0.0.1', () =>
      socket.write(waitsForContinue ? head : Buffer.concat([Buffer.from(head), body])),
    );
    let received = '';
    let bodySent = !waitsForContinue;
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      statuses = [...received.matchAll(/^HTTP\/1\.1 (\d{3})[^\r]*\r\n(?:[^\r]+\r\n)*\r\n/gm)].map(([, s]) => s);
      if (statuses.includes('100') && !bodySent) {
        bodySent = true;
        socket.write(body);
      }
      if (answered()) {
        socket.destroy();
        resolve(statuses);
      }
    });
    // A server that answers before it reads the body (413, 415) closes while it may still be coming.
    socket.on('error', (err) => (answered() ? resolve(statuses) : reject(err)));
  });
}

/** What a request does wrong, and the check of ANSWER_ORDER that finds it. */
interface Fault {
  check: string;
  status: number;
}

const TOKENS = {
  'no token': { header: [], fault: { check: 'the token', status: 401 } },
  'a bad token': { header: ['Authorization: Bearer not-a-token'], fault: { check: 'the token', status: 403 } },
  'a good token': { header: undefined, fault: undefined },
} as const;

/** The bodies, by what is wrong with them (PUT answers a body it cannot take with 404, PATCH with 400). */
function bodiesOf(method: 'PUT' | 'PATCH', id: string, handle: string) {
  const invalid = method === 'PUT' ? 404 : 400;
  const valid = method === 'PUT' ? { ...newBike(), id, handle } : { title: 'a new title' };
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  const overOneMb = Buffer.from(JSON.stringify({ ...valid, description: 'x'.repeat(1024 * 1024) }));
  return {
    'a zstd body': {
      body: json(valid),
      headers: ['Content-Encoding: zstd'],
      fault: { check: "the body's coding", status: 415 },
    },
    'a body over 1 MB': { body: overOneMb, headers: [], fault: { check: "the body's size", status: 413 } },
    'malformed JSON': {
      body: Buffer.from('{"title": '),
      headers: [],
      fault: { check: "the body's syntax", status: invalid },
    },
    'a wrongly typed field': {
      body: json({ ...valid, totalInventory: 'many' }),
      headers: [],
      fault: { check: 'the input', status: invalid },
    },
    'a valid body': { body: json(valid), headers: [], fault: undefined },
  };
}

const STALE: Fault = { check: 'the preconditions', status: 412 };

/** The answer ANSWER_ORDER gives to a request with these faults: the first check's that finds one. */
function expectedOf(faults: (Fault | undefined)[]): Fault {
  const found = faults.filter((fault): fault is Fault => fault !== undefined);
  const order = (fault: Fault) => ANSWER_ORDER.findIndex((step) => step.check === fault.check);
  for (const fault of found) expect(order(fault)).toBeGreaterThanOrEqual(0);
  return found.sort((a, b) => order(a) - order(b))[0];
}

describe("the order of a write's answers", () => {
  const api = useApi();
  const port = () => Number(new URL(api.baseUrl).port);

  const cells = (['PUT', 'PATCH'] as const).flatMap((method) =>
    Object.keys(bodiesOf(method, '', '')).flatMap((body) =>
      Object.keys(TOKENS).map((token) => [method, body, token] as const),
    ),
  );

  it.each(cells)(
    '%s with a stale If-Match and %s, with %s: one answer, the same with and without Expect: 100-continue',
    async (method, bodyName, tokenName) => {
      const bike = await api.create();
      const before = await api.request('GET', `/bikes/${bike.id}`, { token: null });
      const { body, headers, fault } = bodiesOf(method, bike.id, bike.handle)[bodyName as 'a valid body'];
      const token = TOKENS[tokenName as keyof typeof TOKENS];
      const expected = expectedOf([token.fault, fault, STALE]);
      const headOf = (expect: boolean) =>
        [
          `${method} /bikes/${bike.id} HTTP/1.1`,
          'Host: 127.0.0.1',
          'Content-Type: application/json',
          `Content-Length: ${body.length}`,
          'If-Match: "stale"',
          ...(token.header ?? [`Authorization: Bearer ${api.token}`]),
          ...headers,
          ...(expect ? ['Expect: 100-continue'] : []),
          '',
          '',
        ].join('\r\n');

      const without = await exchange(port(), headOf(false), body, false);
      const withExpect = await exchange(port(), headOf(true), body, true);

      expect({ without, withExpect }).toEqual({
        without: [String(expected.status)],
        // The body is asked for only once every check before its syntax has passed.
        withExpect:
          ANSWER_ORDER.findIndex((step) => step.check === expected.check) >=
          ANSWER_ORDER.findIndex((step) => step.check === "the body's syntax")
            ? ['100', String(expected.status)]
            : [String(expected.status)],
      });
      // Nothing was written.
      const after = await api.request('GET', `/bikes/${bike.id}`, { token: null });
      expect(after.headers.get('etag')).toBe(before.headers.get('etag'));
    },
  );

  it('docs/reference/requests-and-answers.md#the-order-of-a-writes-answers lists the checks in the order ANSWER_ORDER makes them', () => {
    const markdown = fs.readFileSync(
      path.join(__dirname, '..', '..', 'docs', 'reference', 'requests-and-answers.md'),
      'utf8',
    );
    const section = markdown.split("## The order of a write's answers\n")[1]?.split('\n#')[0] ?? '';
    const listed = [...section.matchAll(/^\d+\. \*\*([^*]+)\*\*/gm)].map(([, check]) => check.toLowerCase());
    expect(listed).toEqual(ANSWER_ORDER.map((step) => step.check));
  });
});
