import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import {
  createCatalogClient,
  InsufficientScopeError,
  InvalidTokenError,
  IssuanceClosedError,
} from '../../client/src/index.ts';
import { newBike } from '../support/bikes';
import { startTestService, type TestService } from '../support/service';

/**
 * The typed client with an API key (docs/reference/callers.md#api-keys): it trades the key for tokens by
 * itself, renews them before they expire, and surfaces each refusal as its own error.
 */

const run = promisify(execFile);
const KEYS_CLI = path.join(__dirname, '..', '..', 'dist', 'cli', 'keys.js');

async function addKey(svc: TestService, label: string, scopes: string): Promise<string> {
  const { stdout } = await run(process.execPath, [KEYS_CLI, 'add', '--name', label, '--scopes', scopes], {
    env: { PATH: process.env.PATH, DATABASE_URL: svc.databaseUrl },
  });
  return stdout.trim();
}

describe('a client given an API key, where issuance is closed', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { TOKEN_ISSUANCE: 'closed' } });
  });
  afterAll(() => svc?.stop());

  it('writes for an hour of simulated time, trading its key again before each token expires', async () => {
    const apiKey = await addKey(svc, 'hour-long', 'bikes:write');
    let trades = 0;
    const counting: typeof fetch = (input, init) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (url.endsWith('/api/user')) trades++;
      return fetch(input, init);
    };
    const catalog = createCatalogClient({ baseUrl: svc.baseUrl, apiKey, fetch: counting });
    // The clock of this process (the client's and the service's, which runs in it) moves 5 minutes at a time.
    const realNow = Date.now.bind(Date);
    let offset = 0;
    const now = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + offset);
    try {
      const ids: string[] = [];
      for (offset = 0; offset <= 60 * 60_000; offset += 5 * 60_000) ids.push((await catalog.create(newBike())).id);
      expect(ids).toHaveLength(13);
      // One token lives 30 minutes, renewed a minute before: three cover the hour.
      expect(trades).toBeGreaterThanOrEqual(3);
      expect(trades).toBeLessThanOrEqual(4);
    } finally {
      now.mockRestore();
    }
    const db = new Client({ connectionString: svc.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query(
        `SELECT count(*)::int AS n FROM bike_changes WHERE changed_by = 'hour-long' AND changed_by_issuer = 'urn:bike-catalog:key'`,
      );
      expect(rows).toEqual([{ n: 13 }]);
    } finally {
      await db.end();
    }
  });

  it('surfaces each refusal as its own error: a scope its key lacks, a revoked key, issuance closed', async () => {
    const apiKey = await addKey(svc, 'writer-only', 'bikes:write');
    const catalog = createCatalogClient({ baseUrl: svc.baseUrl, apiKey });
    const bike = await catalog.create(newBike());
    await expect(catalog.delete(bike.id)).rejects.toMatchObject({
      constructor: InsufficientScopeError,
      status: 403,
      scope: 'bikes:delete',
    });
    await run(process.execPath, [KEYS_CLI, 'revoke', 'writer-only'], {
      env: { PATH: process.env.PATH, DATABASE_URL: svc.databaseUrl },
    });
    await expect(catalog.create(newBike())).rejects.toBeInstanceOf(InvalidTokenError);
    await expect(createCatalogClient({ baseUrl: svc.baseUrl }).create(newBike())).rejects.toBeInstanceOf(
      IssuanceClosedError,
    );
  });
});
