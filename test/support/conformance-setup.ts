import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { apiDocument } from '../../src/api/document';
import { judge, type Judgement, type OpenApiDocument } from './conformance';
import { tapExchanges, type TappedExchange, untapped } from './exchanges';

/**
 * Run before every test file (the jest configs' setupFilesAfterEnv): every answer the file's
 * tests receive from a server, by any client, is judged against the OpenAPI document that server
 * serves (conformance.ts), and the file fails, naming each exchange and what is wrong with it,
 * when one is outside the document. CONFORMANCE_LOG=<file> appends every judged exchange to that
 * file, one JSON line each.
 */

interface Judged {
  exchange: TappedExchange;
  judgement: Judgement;
}

/**
 * Each server's document, fetched when the server first answers (it may be gone by the end):
 * undefined for a server that answers with none (the metrics listener of METRICS_PORT, which is
 * not the API), whose answers are not judged.
 */
const documents = new Map<string, Promise<OpenApiDocument | undefined>>();
/** One object per distinct document, so its schemas are compiled once. */
const distinct = new Map<string, OpenApiDocument>();

/**
 * The document this code builds, for a server that no longer answers. Its module is imported with
 * this file, not when a server is found gone: that may be as late as the file's teardown (a
 * server that first answered in an afterAll), when Jest imports nothing more, and the judging
 * then failed on an empty module ("apiDocument is not a function").
 */
function builtDocument(): OpenApiDocument {
  return apiDocument() as unknown as OpenApiDocument;
}

function servedDocument(origin: string): Promise<OpenApiDocument | undefined> {
  return new Promise((resolve) => {
    const fallback = () => resolve(builtDocument());
    untapped(() =>
      http.get(`${origin}/openapi.json`, { agent: false, timeout: 10_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', fallback);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode === 404) return resolve(undefined);
          if (res.statusCode !== 200) return fallback();
          try {
            if (!distinct.has(text)) distinct.set(text, JSON.parse(text) as OpenApiDocument);
            resolve(distinct.get(text));
          } catch {
            fallback();
          }
        });
      }),
    )
      .on('timeout', function (this: http.ClientRequest) {
        this.destroy();
      })
      .on('error', fallback);
  });
}

function documentOf(origin: string): Promise<OpenApiDocument | undefined> {
  let document = documents.get(origin);
  if (!document) documents.set(origin, (document = servedDocument(origin)));
  return document;
}

const tap = tapExchanges({
  label: () => expect.getState().currentTestName ?? 'a hook',
  onServer: (origin) => void documentOf(origin),
});

async function judged(exchange: TappedExchange): Promise<Judged> {
  const document = await documentOf(exchange.origin);
  const judgement = document ? judge(document, exchange) : { answeredBy: 'a server with no document', violations: [] };
  return { exchange, judgement };
}

const describeExchange = ({ request, status, label }: TappedExchange) =>
  `${request.method || '(no request line)'} ${request.target.slice(0, 100)} -> ${status}, in "${label}"`;

/** The violations, each with how often it came and the first few exchanges it came in. */
function report(failed: Judged[], all: number): string {
  const byCause = new Map<string, TappedExchange[]>();
  for (const { exchange, judgement } of failed) {
    for (const violation of judgement.violations) {
      const cause = `${judgement.answeredBy}: ${violation}`;
      if (!byCause.has(cause)) byCause.set(cause, []);
      byCause.get(cause)?.push(exchange);
    }
  }
  const lines = [...byCause].map(
    ([cause, exchanges]) =>
      `- ${cause} (${exchanges.length}x)\n` +
      exchanges
        .slice(0, 3)
        .map((exchange) => `    ${describeExchange(exchange)}\n`)
        .join(''),
  );
  return (
    `${failed.length} of the ${all} answers this file received are not what /openapi.json describes ` +
    `(test/support/conformance.ts):\n${lines.join('')}`
  );
}

afterAll(async () => {
  const results = await Promise.all(tap.stop().map(judged));
  const log = process.env.CONFORMANCE_LOG;
  if (log) {
    const file = path.relative(process.cwd(), expect.getState().testPath ?? '');
    const lines = results.map(({ exchange: { request, status, headers, label }, judgement }) =>
      JSON.stringify({
        file,
        label,
        method: request.method,
        target: request.target,
        status,
        headers: Object.keys(headers),
        ...judgement,
      }),
    );
    fs.appendFileSync(log, lines.map((line) => `${line}\n`).join(''));
  }
  const failed = results.filter(({ judgement }) => judgement.violations.length > 0);
  if (failed.length > 0) throw new Error(report(failed, results.length));
});
