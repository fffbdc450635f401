import fs from 'node:fs';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { DOCS_ROUTES } from '../../src/http/docs-router';
import { HEALTH_ROUTES } from '../../src/http/health-router';
import { API_ROUTES } from '../../src/api';
import { type Relay, relayTo } from '../support/exchanges';
import { spawnService, type ServiceProcess } from '../support/process';
import { tempDataDir } from '../support/temp-dir';
import { PATIENCE_MS } from '../support/wait';

/**
 * GET /docs opened in a real headless Chromium (Debian's package, driven by playwright-core),
 * against the built service started as `npm start` starts it: embedded PostgreSQL, fresh data
 * directory. Set DOCS_BASE_URL to check an already running service instead.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/**
 * Where the page's pictures are kept, for a person to look at: in the clone (gitignored), not at a
 * fixed name in the shared /tmp, where another local user could have put a link of their own.
 */
const SCREENSHOTS = path.join(__dirname, 'screenshots');
const SCREENSHOT = path.join(SCREENSHOTS, 'docs.png');
const SCREENSHOT_EXPANDED = path.join(SCREENSHOTS, 'docs-create.png');

/** Every operation the service declares, as Swagger UI shows them. */
/** The API's operations, and the operator's routes and the docs page's (tag `operations`). */
const OPERATIONS = [
  ...Object.values(API_ROUTES).map((route) => `${route.method.toUpperCase()} ${route.path.replace(/:(\w+)/g, '{$1}')}`),
  ...[...HEALTH_ROUTES, ...DOCS_ROUTES].map((route) => `GET ${route.path}`),
];

describe('GET /docs in headless Chromium', () => {
  const scratch = tempDataDir('browser');
  let service: ServiceProcess | undefined;
  let relay: Relay | undefined;
  let baseUrl: string;
  let browser: BrowserContext;
  let page: Page;
  const consoleErrors: string[] = [];
  const failedRequests: string[] = [];
  const requested: string[] = [];

  beforeAll(async () => {
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    if (process.env.DOCS_BASE_URL) {
      baseUrl = process.env.DOCS_BASE_URL.replace(/\/$/, '');
    } else {
      service = await spawnService({ DATA_DIR: path.join(scratch, 'data') });
      // The page's answers pass through this process, to be judged against /openapi.json like any test's.
      relay = await relayTo(service.baseUrl);
      baseUrl = relay.baseUrl;
    }
    // A fresh profile each run (Playwright passes it to Chromium as --user-data-dir, and adds --headless).
    browser = await chromium.launchPersistentContext(path.join(scratch, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1280, height: 900 },
    });
    page = browser.pages()[0] ?? (await browser.newPage());
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (err) => consoleErrors.push(err.message));
    page.on('request', (request) => requested.push(request.url()));
    page.on('requestfailed', (request) => failedRequests.push(`${request.url()}: ${request.failure()?.errorText}`));
    page.on('response', (response) => {
      if (response.status() >= 400) failedRequests.push(`${response.url()}: ${response.status()}`);
    });

    const res = await page.goto(`${baseUrl}/docs`);
    expect(res?.status()).toBe(200);
    // Swagger UI renders the operations once it has fetched and read /openapi.json.
    await page
      .locator('.opblock')
      .nth(OPERATIONS.length - 1)
      .waitFor({ timeout: PATIENCE_MS });
  });

  afterAll(async () => {
    await browser?.close();
    await relay?.close();
    if (service) {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('lists exactly the operations the service declares', async () => {
    const listed = await page.$$eval('.opblock-summary', (summaries) =>
      summaries.map((summary) => {
        const method = summary.querySelector('.opblock-summary-method')?.textContent?.trim() ?? '';
        const route = summary.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '';
        return `${method} ${route}`;
      }),
    );
    expect([...listed].sort()).toEqual([...OPERATIONS].sort());
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  it('shows the title from /openapi.json, and no error from reading the document', async () => {
    await expect(page.locator('.info .title').innerText()).resolves.toMatch(/^Bike catalog/);
    expect(await page.locator('.errors-wrapper').count()).toBe(0);
  });

  it('shows the documented example body and the lock of the bearer scheme when "Create a bike" is opened', async () => {
    const create = page.locator('#operations-bikes-createBike');
    await create.locator('.opblock-summary').first().click();
    await expect(create.locator('.body-param__example, .microlight').first().innerText()).resolves.toContain(
      'Hybrid Bicycle Sentra',
    );
    expect(await create.locator('.authorization__btn').count()).toBeGreaterThan(0);
    await create.screenshot({ path: SCREENSHOT_EXPANDED });
  });

  it('loads everything from the service itself (no CDN), with no failed request and no console error', () => {
    const origin = new URL(baseUrl).origin;
    expect(requested.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:'))).toEqual([]);
    expect(requested).toEqual(
      expect.arrayContaining([`${origin}/openapi.json`, `${origin}/docs/swagger-ui-bundle.js`]),
    );
    expect(failedRequests).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
});
