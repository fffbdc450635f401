import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../src/postgres/embedded-postgres';
import { CLIENT, codeBlock, newProject, npmEnv } from './client/project';
import { type Relay, relayTo } from './support/exchanges';
import { startTestService, type TestService } from './support/service';
import { tempDataDir } from './support/temp-dir';
import { waitFor } from './support/wait';

/**
 * The README's examples, run as a newcomer runs them: every `sh` block of its "Examples" section,
 * in order, in one bash, against the real service (its address in place of localhost:3000). A
 * curl that gets an error status fails the run (`--fail-with-body`), so an example that stopped
 * working cannot stay in the README; what each example promises is checked in its output. It has
 * a PostgreSQL of its own: a transaction of another test file's, in any database of a shared
 * server, would hold the feed's changes back (docs/reference/browse-and-sync.md#the-change-feed).
 */

const README_FILE = path.join(__dirname, '..', 'README.md');
const README = fs.readFileSync(README_FILE, 'utf8');
const EXAMPLES = README.slice(README.indexOf('\n## Examples\n')).split('\n## ')[1];
const BLOCKS = [...EXAMPLES.matchAll(/```sh\n([\s\S]*?)```/g)].map(([, script]) => script);

/**
 * curl as the examples call it, failing on an error status. `--max-time` ends the event-stream
 * example on purpose: its timeout (28) is the example working.
 */
const PRELUDE = `
curl() {
  command curl --fail-with-body "$@"
  local status=$?
  if [ $status -eq 28 ] && [[ " $* " == *" --max-time "* ]]; then return 0; fi
  if [ $status -ne 0 ]; then echo "curl $* failed: $status" >&2; exit 1; fi
}
`;

describe("the README's examples", () => {
  const dataDir = tempDataDir('readme');
  let postgres: EmbeddedPostgres;
  let svc: TestService;
  let relay: Relay;
  let outputs: string[];

  beforeAll(async () => {
    postgres = await startEmbeddedPostgres({ dataDir, ephemeral: true });
    svc = await startTestService({ databaseUrl: postgres.adminUrl });
    // The examples' answers (curl's, the client's) pass through this process, to be judged against
    // /openapi.json like any test's.
    relay = await relayTo(svc.baseUrl);
    const script = BLOCKS.map((block, i) => `echo "@@example ${i}"\n${block}`).join('\n');
    const { stdout } = await promisify(execFile)('bash', [
      '-c',
      PRELUDE + script.replaceAll('http://localhost:3000', relay.baseUrl),
    ]);
    outputs = stdout.split(/@@example \d+\n/).slice(1);
  });
  afterAll(async () => {
    await relay?.close();
    await svc?.stop();
    await postgres?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const outputOf = (start: string) => {
    const index = BLOCKS.findIndex((block) => block.includes(start));
    if (index < 0) throw new Error(`no example runs ${start}`);
    return outputs[index];
  };

  it('are all there, and all ran', () => {
    expect(BLOCKS.length).toBeGreaterThanOrEqual(10);
    expect(outputs).toHaveLength(BLOCKS.length);
  });

  it('create a bike with the handle the later examples use', () => {
    expect(JSON.parse(outputOf('curl -s -X POST http://localhost:3000/bikes/ -H'))).toMatchObject({
      handle: 'hybrid-bicycle-sentra',
    });
  });

  it('replace, then update it without and with If-Match', () => {
    expect(JSON.parse(outputOf('-X PUT'))).toMatchObject({ handle: 'sentra-2025', totalInventory: 3 });
    expect(JSON.parse(outputOf('"availableForSale": false}'))).toMatchObject({ totalInventory: 0 });
    expect(JSON.parse(outputOf('If-Match: $ETAG'))).toMatchObject({ handle: 'sentra-2025', totalInventory: 3 });
  });

  it('retry a create with an Idempotency-Key: one create, its answer replayed', () => {
    const answers = outputOf('Idempotency-Key').split(/(?=^HTTP\/1\.1 )/m);
    expect(answers.map((answer) => answer.split('\r\n')[0])).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
    expect(answers.map((answer) => /^idempotent-replayed: true\r$/im.test(answer))).toEqual([false, true]);
    const ids = answers.map((answer) => (JSON.parse(answer.slice(answer.indexOf('\r\n\r\n'))) as { id: string }).id);
    expect(ids[1]).toBe(ids[0]);
  });

  it('browse a page with a Link to the next', () => {
    expect(outputOf('/bikes?inStock=true')).toMatch(
      /^link: <\/bikes\?inStock=true&sort=price&limit=1&cursor=[^>]+>; rel="next"\r$/im,
    );
  });

  it('follow the change feed: the delete is there, and nothing after the list', () => {
    const [changes, caughtUp] = outputOf('/bikes/changes?limit=3').split(/(?<=\])\n?(?=\[)/);
    expect(JSON.parse(changes)).toHaveLength(3);
    expect(JSON.parse(caughtUp)).toEqual([]);
    const stream = outputOf('text/event-stream');
    expect(stream).toMatch(/^id: \S+\ndata: \{"cursor":/m);
    expect(stream).toContain('"type":"delete"');
  });

  /**
   * The client's example, as a new user runs it: the install line in a project of their own
   * (`/path/to/bike-catalog` being this clone), then the script, stopped with Ctrl-C once it
   * follows the catalog and has shown a change made meanwhile.
   */
  it('install the client and run its example: create, update, a page, then follow until Ctrl-C', async () => {
    const section = '## From JavaScript or TypeScript';
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'bike-catalog-readme-'));
    const project = newProject(home, 'shop');
    const install = codeBlock(README_FILE, section, 'sh').replace('/path/to/bike-catalog/client', CLIENT);
    await promisify(execFile)('bash', ['-c', install], { cwd: project, env: npmEnv() });
    const script = codeBlock(README_FILE, section, 'js').replaceAll('http://localhost:3000', relay.baseUrl);
    fs.writeFileSync(path.join(project, 'example.mjs'), script);

    const child = spawn(process.execPath, ['example.mjs'], { cwd: project, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await waitFor('the example to list the catalog', () => /^list \d+$/m.test(output) || undefined);
      expect(output).toMatch(/^\[.*'Brompton P Line'.*\]$/m);
      const { id, totalInventory } = (
        (await (await fetch(`${svc.baseUrl}/bikes/search/by-title?query=Brompton%20P%20Line`)).json()) as {
          id: string;
          totalInventory: number;
        }[]
      )[0];
      expect(totalInventory).toBe(3);
      await fetch(`${svc.baseUrl}/bikes/${id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${await svc.token()}`, 'content-type': 'application/json' },
        body: JSON.stringify({ totalInventory: 2 }),
      });
      await waitFor('the example to show the change', () => output.includes(`upsert ${id}`) || undefined);
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
    fs.rmSync(home, { recursive: true, force: true });
  });
});
