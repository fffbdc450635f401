import { readConfig } from '../../src/config';
import { newBike } from '../support/bikes';
import { createTestDatabase } from '../support/databases';
import { countStatements, type StatementCounter } from '../support/statement-counter';
import { startTestService, type TestService } from '../support/service';
import { rawRequest } from './helpers';

/**
 * Prepared statements (docs/reference/database.md#prepared-statements): on a connection that is the
 * server's own session, a statement compiled once is parsed once, under its name, and after that
 * only bound; a search's, whose plan must see its term, is parsed every time. Through a
 * transaction pooler none is named (test/scale/pgbouncer.test.ts); DATABASE_PREPARED_STATEMENTS=off
 * names none either. Seen by a proxy that reads what the service sends.
 */
describe('prepared statements', () => {
  /** The pool's connections: each prepares a statement once. */
  const POOL_SIZE = 10;

  async function serviceThrough(env: Record<string, string> = {}) {
    const counter = await countStatements(await createTestDatabase());
    const svc = await startTestService({ databaseUrl: counter.url, env });
    return { counter, svc };
  }

  describe('with the default (auto), straight to PostgreSQL', () => {
    let counter: StatementCounter;
    let svc: TestService;
    let token: string;

    beforeAll(async () => {
      ({ counter, svc } = await serviceThrough());
      token = await svc.token();
    });
    afterAll(async () => {
      await svc.stop();
      await counter.close();
    });

    const create = async () => {
      const reply = await rawRequest(
        svc.baseUrl,
        'POST',
        '/bikes/',
        { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        JSON.stringify(newBike()),
      );
      expect(reply.status).toBe(200);
      return JSON.parse(reply.text) as { id: string; title: string };
    };
    const get = async (path: string) => {
      const reply = await rawRequest(svc.baseUrl, 'GET', path, {});
      expect(reply.status).toBe(200);
      return reply;
    };

    it('parses a GET by id, a page and a create once per connection at most, under a name, and then binds them', async () => {
      const bike = await create();
      counter.reset();
      for (let i = 0; i < 30; i++) {
        await get(`/bikes/${bike.id}`);
        await get('/bikes?limit=5&sort=-price');
        await create();
      }
      const runs = (pattern: RegExp) => counter.statements().filter((text) => pattern.test(text));
      const parses = (pattern: RegExp) => counter.parsed().filter(({ text }) => pattern.test(text));
      for (const statement of [
        /^select .* from "bikes" where "id" = \$1$/,
        /^with "head" as .* order by "bikes"."min_price_currency_key" desc/s,
        /^with "writer" as materialized .* insert into "bikes"/,
      ]) {
        expect(runs(statement)).toHaveLength(30);
        expect(parses(statement).length).toBeLessThanOrEqual(POOL_SIZE);
        expect(parses(statement).every(({ name }) => /^bikes_/.test(name))).toBe(true);
      }
    });

    it("parses a search's statement every time, unnamed: its plan must see the term", async () => {
      const bike = await create();
      counter.reset();
      for (let i = 0; i < 3; i++) await get(`/bikes/search/by-title?query=${encodeURIComponent(bike.title)}`);
      const searches = counter.parsed().filter(({ text }) => /"title" like \$1/.test(text));
      expect(searches).toHaveLength(3);
      expect(searches.every(({ name }) => name === '')).toBe(true);
    });
  });

  it('names none with DATABASE_PREPARED_STATEMENTS=off', async () => {
    const { counter, svc } = await serviceThrough({ DATABASE_PREPARED_STATEMENTS: 'off' });
    try {
      const token = await svc.token();
      const reply = await rawRequest(
        svc.baseUrl,
        'POST',
        '/bikes/',
        { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        JSON.stringify(newBike()),
      );
      const { id } = JSON.parse(reply.text) as { id: string };
      for (let i = 0; i < 5; i++) expect((await rawRequest(svc.baseUrl, 'GET', `/bikes/${id}`, {})).status).toBe(200);
      expect(counter.parsed().length).toBeGreaterThan(5);
      expect(counter.parsed().filter(({ name }) => name !== '')).toEqual([]);
    } finally {
      await svc.stop();
      await counter.close();
    }
  });

  it('refuses any other value at start, naming the setting', () => {
    expect(() => readConfig({ DATABASE_PREPARED_STATEMENTS: 'sometimes' })).toThrow(
      'DATABASE_PREPARED_STATEMENTS must be auto, on or off, got "sometimes"',
    );
  });
});
