import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { type BrowserContext, chromium, type Page, type Request } from 'playwright-core';
import type { Bike, CatalogEvent } from '../../client/src/index.ts';
import { newBike } from '../support/bikes';
import { type Relay, relayTo } from '../support/exchanges';
import { spawnService, type ServiceProcess } from '../support/process';
import { tempDataDir } from '../support/temp-dir';
import { CLIENT, codeBlock } from '../client/project';

/**
 * The client (client/dist/index.js, as a site serves it) in a real headless Chromium, from a page
 * on another origin than the service's (CORS_ORIGIN names it): client/README.md's page that edits
 * safely, a page that creates (Idempotency-Key), updates (If-Match), sends a compressed body
 * and follows the catalog by an event stream, and a storefront's listing (a search, facets).
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** What the test page puts on `window` (globalThis) for page.evaluate. */
interface TestWindow {
  client: typeof import('../../client/src/index.ts');
  events: CatalogEvent[];
  stop: AbortController;
  following: Promise<void>;
}

describe('the client in headless Chromium, from a page on another origin', () => {
  const scratch = tempDataDir('browser-client');
  let service: ServiceProcess;
  /** The service as the page reaches it: through this process, so its answers are judged against /openapi.json. */
  let relay: Relay;
  let site: http.Server;
  let siteUrl: string;
  let browser: BrowserContext;
  let page: Page;
  const errors: string[] = [];
  const sent: Request[] = [];

  /** The bike as the service has it now. */
  const current = async (id: string) => (await (await fetch(`${service.baseUrl}/bikes/${id}`)).json()) as Bike;
  const write = async (method: string, url: string, body: unknown) => {
    const { token } = (await (await fetch(`${service.baseUrl}/api/user`, { method: 'POST' })).json()) as {
      token: string;
    };
    const res = await fetch(`${service.baseUrl}${url}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as Bike;
  };

  beforeAll(async () => {
    // The site: the guide's page, a page for the tests, and the client beside them.
    const pages: Record<string, { type: string; body: () => string }> = {
      '/edit.html': {
        type: 'text/html',
        body: () => codeBlock(path.join(CLIENT, 'README.md'), '## A page that edits safely', 'html'),
      },
      '/test.html': {
        type: 'text/html',
        body: () =>
          '<script type="module">import * as client from "./bike-catalog-client.js"; window.client = client;</script>',
      },
      '/bike-catalog-client.js': {
        type: 'text/javascript',
        body: () => fs.readFileSync(path.join(CLIENT, 'dist', 'index.js'), 'utf8'),
      },
    };
    site = http.createServer((req, res) => {
      const found = pages[new URL(req.url ?? '/', 'http://site').pathname];
      if (!found) return void res.writeHead(404).end();
      res
        .writeHead(200, { 'content-type': found.type })
        .end(found.body().replaceAll('http://localhost:3000', relay.baseUrl));
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    service = await spawnService({ DATA_DIR: path.join(scratch, 'data'), CORS_ORIGIN: siteUrl });
    relay = await relayTo(service.baseUrl);

    browser = await chromium.launchPersistentContext(path.join(scratch, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'],
    });
    page = browser.pages()[0] ?? (await browser.newPage());
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('request', (request) => sent.push(request));
  });

  afterAll(async () => {
    await browser?.close();
    await relay?.close();
    site?.close();
    if (service) {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  /** The requests the page sent to the service's `path` with `method` (not their preflights), since `from`. */
  const toService = (method: string, path: RegExp, from = 0) =>
    sent.slice(from).filter((request) => {
      const url = new URL(request.url());
      return url.origin === relay.baseUrl && path.test(url.pathname) && request.method() === method;
    });

  it("client/README.md's page saves a stock, keeps another's change it had not seen, and saves onto it", async () => {
    const bike = await write('POST', '/bikes/', newBike({ totalInventory: 7 }));
    await page.goto(`${siteUrl}/edit.html?id=${bike.id}`);
    const stock = page.locator('input[name=stock]');
    const note = page.locator('output[name=note]');
    await page.waitForFunction("document.forms[0].stock.value !== ''");
    await expect(stock.inputValue()).resolves.toBe('7');
    const before = sent.length;

    await stock.fill('5');
    await page.locator('button').click();
    await note.filter({ hasText: 'Saved.' }).waitFor();
    expect((await current(bike.id)).totalInventory).toBe(5);

    await write('PATCH', `/bikes/${bike.id}`, { totalInventory: 9 });
    await stock.fill('4');
    await page.locator('button').click();
    await note.filter({ hasText: 'Not saved: changed meanwhile, 9 in stock now.' }).waitFor();
    expect((await current(bike.id)).totalInventory).toBe(9);

    await page.locator('button').click();
    await note.filter({ hasText: 'Saved.' }).waitFor();
    expect((await current(bike.id)).totalInventory).toBe(4);
    const patches = toService('PATCH', /^\/bikes\//, before);
    expect(patches).toHaveLength(3);
    for (const patch of patches) expect(patch.headers()['if-match']).toMatch(/^"/);
    expect(errors).toEqual([]);
  });

  it('creates with an Idempotency-Key, updates with If-Match, and follows the catalog by an event stream', async () => {
    await page.goto(`${siteUrl}/test.html`);
    await page.waitForFunction(() => 'client' in globalThis);
    const before = sent.length;
    const fields = newBike();
    const made = await page.evaluate(
      async ({ baseUrl, fields }) => {
        const { client } = globalThis as unknown as TestWindow;
        const catalog = client.createCatalogClient({ baseUrl, username: 'browser' });
        const bike = await catalog.create(fields);
        const updated = await catalog.update(bike.id, { totalInventory: 1 });
        const test = globalThis as unknown as TestWindow;
        test.events = [];
        test.stop = new AbortController();
        test.following = catalog.follow((event) => void test.events.push(event), { signal: test.stop.signal });
        return { bike, updated };
      },
      { baseUrl: relay.baseUrl, fields },
    );
    expect(made.updated).toEqual({ ...made.bike, totalInventory: 1 });
    expect(await current(made.bike.id)).toEqual(made.updated);
    expect(toService('POST', /^\/bikes\/$/, before).map((request) => request.headers()['idempotency-key'])).toEqual([
      expect.stringMatching(UUID_V4),
    ]);
    expect(toService('PATCH', /^\/bikes\//, before).map((request) => request.headers()['if-match'])).toEqual([
      expect.stringMatching(/^"/),
    ]);

    // The page lists, then streams: a bike made now by another comes to it as an event.
    await page.waitForFunction(() => (globalThis as unknown as TestWindow).events.length > 0);
    const other = await write('POST', '/bikes/', newBike());
    const events = await page.waitForFunction((id) => {
      const { events } = globalThis as unknown as TestWindow;
      return events.some((event) => event.type === 'upsert' && event.id === id) && events;
    }, other.id);
    const [list, ...changes] = (await events.jsonValue()) as CatalogEvent[];
    expect(list).toMatchObject({ type: 'list', bikes: expect.arrayContaining([made.updated]) });
    expect(changes.at(-1)).toEqual({ cursor: expect.any(String), type: 'upsert', id: other.id, bike: other });
    const streams = sent.slice(before).filter((request) => request.resourceType() === 'eventsource');
    expect(streams.map((request) => new URL(request.url()).pathname)).toEqual(['/bikes/changes']);
    await page.evaluate(async () => {
      const test = globalThis as unknown as TestWindow;
      test.stop.abort();
      await test.following;
    });
    expect(errors).toEqual([]);
  });

  it("from an origin the service's CORS_ORIGIN does not name, says so at once: a read is not retried, a write not sent, nothing is unknown", async () => {
    // localhost is another origin than 127.0.0.1, which CORS_ORIGIN names.
    const elsewhere = siteUrl.replace('127.0.0.1', 'localhost');
    await page.goto(`${elsewhere}/test.html`);
    await page.waitForFunction(() => 'client' in globalThis);
    const bike = await write('POST', '/bikes/', newBike());
    const before = sent.length;
    const refused = await page.evaluate(
      async ({ baseUrl, id, fields }) => {
        const { client } = globalThis as unknown as TestWindow;
        const catalog = client.createCatalogClient({ baseUrl, username: 'browser' });
        const failure = (err: unknown) => {
          const { name, message, written, status } = err as Error & { written?: string; status?: number };
          return { name, message, written, status, blocked: err instanceof client.BlockedError };
        };
        return {
          read: await catalog.get(id).then(() => undefined, failure),
          write: await catalog.create(fields).then(() => undefined, failure),
        };
      },
      { baseUrl: relay.baseUrl, id: bike.id, fields: newBike() },
    );
    for (const failure of [refused.read, refused.write]) {
      expect(failure).toMatchObject({ name: 'BlockedError', blocked: true, written: 'nothing' });
      expect(failure?.message).toContain(`its CORS_ORIGIN must name ${elsewhere}`);
      expect(failure?.message).not.toContain('unknown');
    }
    expect(toService('GET', /^\/bikes\//, before)).toHaveLength(1);
    expect(toService('POST', /^\/bikes\/$/, before)).toEqual([]);
    expect(errors).toEqual([]);
  });

  it("shows a storefront's listing: a shopper's search through the client, and facets() with the counts", async () => {
    const word = `Velozq${Date.now()}`;
    const made: Bike[] = [];
    for (const vendor of ['Trek', 'Giant', 'Trek']) {
      made.push(await write('POST', '/bikes/', newBike({ title: `${word} Électrique`, vendor })));
    }
    await page.goto(`${siteUrl}/test.html`);
    await page.waitForFunction(() => 'client' in globalThis);
    const before = sent.length;
    const listing = await page.evaluate(
      async ({ baseUrl, typed }) => {
        const { client } = globalThis as unknown as TestWindow;
        const catalog = client.createCatalogClient({ baseUrl });
        // The shopper types the word without its accent, still typing the last one.
        const filters = { q: `${typed} electri`, vendor: ['Trek'] };
        const counts = await catalog.facets(filters, { facets: ['vendor'] });
        const titles: string[] = [];
        for await (const page of catalog.pages(filters)) titles.push(...page.map((bike) => bike.id));
        return { counts, titles };
      },
      { baseUrl: relay.baseUrl, typed: word.toLowerCase() },
    );
    expect(listing.counts).toEqual({
      total: 2,
      facets: {
        vendor: [
          { value: 'Trek', count: 2, selected: true },
          { value: 'Giant', count: 1, selected: false },
        ],
      },
      prices: [{ currency: 'USD', min: 499.99, max: 499.99 }],
    });
    expect(listing.titles).toEqual([made[0].id, made[2].id]);
    expect(toService('GET', /^\/bikes\/facets$/, before)).toHaveLength(1);
    expect(errors).toEqual([]);
  });

  // The preflight allows Content-Encoding on every route that reads a body (issue 30 item 13).
  it('sends a compressed body (Content-Encoding: gzip) from the page', async () => {
    await page.goto(`${siteUrl}/test.html`);
    await page.waitForFunction(() => 'client' in globalThis);
    const fields = newBike();
    const bike = await page.evaluate(
      async ({ baseUrl, fields }) => {
        const { client } = globalThis as unknown as TestWindow;
        return client.createCatalogClient({ baseUrl, username: 'browser', compress: true, attempts: 2 }).create(fields);
      },
      { baseUrl: relay.baseUrl, fields },
    );
    expect(await current(bike.id)).toEqual(bike);
  });
});
