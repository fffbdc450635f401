import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { operatorToken } from '../../src/auth/tokens';
import type { Bike, BikeFields } from '../../src/bikes/bike';
import { toModelFields } from '../../src/bikes/fields';
import { statements } from '../../src/bikes/repository';
import { client, newBike } from '../support/bikes';
import { ISSUER, providerKey, startProvider, type TestProvider } from '../support/identity-provider';
import { startTestService, type TestService } from '../support/service';
import { waitFor } from '../support/wait';

/**
 * Who changed what (docs/reference/callers.md#who-changed-what): each change in the change log carries its
 * writer, as the write's own statement set it for its transaction: a name only claimed (a token of
 * POST /api/user), the operator's or the identity provider's subject, or, for a write outside the
 * API, the database role. The guide's "who changed this price" report (docs/reporting.md) is run
 * as written over writes by each of them.
 */

const OPERATOR = 'urn:bike-catalog:operator';

type Row = Record<string, unknown>;

/** A name only claimed: a token of POST /api/user. */
const CLAIMED = { changed_by_proven: false, changed_by_issuer: null };
/** A database role, which the database authenticated: a write outside the API. */
const BY_THE_DATABASE = { changed_by_proven: true, changed_by_issuer: null };
const provenBy = (issuer: string) => ({ changed_by_proven: true, changed_by_issuer: issuer });

/** A bike priced `min`-`max` in `currency`. */
const priced = (min: number, max: number, currency = 'USD', overrides: Partial<BikeFields> = {}) =>
  newBike({
    ...overrides,
    priceRange: {
      minPrice: { amount: min, currencyCode: currency },
      maxPrice: { amount: max, currencyCode: currency },
    },
  });

describe('who changed what', () => {
  let provider: TestProvider;
  let svc: TestService;
  let db: Client;
  let role: string;
  /** The tokens of each kind of writer. */
  let alice: string;
  let anonymous: string;
  let ops: string;
  let shop: string;

  beforeAll(async () => {
    const key = await providerKey('RS256');
    provider = await startProvider([key]);
    svc = await startTestService({ env: provider.env });
    db = new Client({ connectionString: svc.databaseUrl });
    await db.connect();
    role = (await db.query<{ role: string }>('SELECT session_user AS role')).rows[0].role;
    alice = await svc.token('alice');
    const res = await fetch(`${svc.baseUrl}/api/user`, { method: 'POST' });
    anonymous = ((await res.json()) as { token: string }).token;
    ops = operatorToken(svc.jwtSecret, 'ops', 600);
    shop = await key.sign({ sub: 'shop-sync' });
  });

  afterAll(async () => {
    await db?.end();
    await svc?.stop();
    await provider?.stop();
  });

  /** The writers of the changes of these bikes, in the log's order. */
  async function writersOf(ids: string[]): Promise<Row[]> {
    const { rows } = await db.query(
      `SELECT bike_id, kind, changed_by, changed_by_proven, changed_by_issuer FROM bike_changes
        WHERE bike_id = ANY($1::uuid[]) ORDER BY txid, change_id`,
      [ids],
    );
    return rows;
  }

  /** A change as the log has it: `how` the name is proven (CLAIMED, BY_THE_DATABASE, provenBy). */
  const change = (bike_id: string, kind: string, changed_by: string | null, how: Row) => ({
    bike_id,
    kind,
    changed_by,
    ...how,
  });

  it('every write through the API records its caller: claimed, anonymous, operator or identity provider; SQL by hand its role', async () => {
    const as = (token: string) => client(svc.baseUrl, token);
    const ok = async (res: Promise<Response>) => {
      const reply = await res;
      expect(reply.status).toBe(200);
      return reply;
    };

    const a = await as(alice).create();
    // A keyed create, and its replay: one change.
    const keyed = { body: newBike(), headers: { 'Idempotency-Key': randomUUID() } };
    const b = (await (await ok(as(alice).request('POST', '/bikes/', keyed))).json()) as Bike;
    expect((await ok(as(alice).request('POST', '/bikes/', keyed))).headers.get('Idempotent-Replayed')).toBe('true');
    // PUT without conditions (an upsert), with If-Match, and with If-None-Match: * (a create).
    await ok(as(ops).request('PUT', `/bikes/${a.id}`, { body: { ...a, title: 'By the operator' } }));
    const etag = (await ok(as(ops).request('GET', `/bikes/${a.id}`))).headers.get('ETag') as string;
    await ok(as(shop).request('PUT', `/bikes/${a.id}`, { body: { ...a }, headers: { 'If-Match': etag } }));
    const c = randomUUID();
    await ok(
      as(ops).request('PUT', `/bikes/${c}`, {
        body: { ...newBike(), id: c, handle: 'c' },
        headers: { 'If-None-Match': '*' },
      }),
    );
    await ok(as(anonymous).request('PATCH', `/bikes/${a.id}`, { body: { totalInventory: 3 } }));
    await ok(as(shop).request('DELETE', `/bikes/${b.id}`));
    await db.query(`UPDATE bikes SET title = 'By hand' WHERE id = $1`, [c]);
    await db.query('DELETE FROM bikes WHERE id = $1', [a.id]);

    expect(await writersOf([a.id, b.id, c])).toEqual([
      change(a.id, 'create', 'alice', CLAIMED),
      change(b.id, 'create', 'alice', CLAIMED),
      change(a.id, 'update', 'ops', provenBy(OPERATOR)),
      change(a.id, 'update', 'shop-sync', provenBy(ISSUER)),
      change(c, 'create', 'ops', provenBy(OPERATOR)),
      change(a.id, 'update', null, CLAIMED),
      change(b.id, 'delete', 'shop-sync', provenBy(ISSUER)),
      change(c, 'update', `sql:${role}`, BY_THE_DATABASE),
      change(a.id, 'delete', `sql:${role}`, BY_THE_DATABASE),
    ]);
  });

  it('a claimed name PostgreSQL text cannot hold is recorded with U+FFFD in its place, and the write succeeds', async () => {
    const api = client(svc.baseUrl, await svc.token('nul\u0000here'));
    const bike = await api.create();
    expect(await writersOf([bike.id])).toEqual([change(bike.id, 'create', 'nul\uFFFDhere', CLAIMED)]);
  });

  it('the writer is set by the write statement for its transaction alone: the next statement on the connection is not attributed to it', async () => {
    const session = new Client({ connectionString: svc.databaseUrl });
    await session.connect();
    try {
      const query = ((text: string, values: unknown[]) => session.query(text, values)) as Parameters<
        typeof statements.insert.run
      >[0];
      const id = randomUUID();
      const [written] = await statements.insert.run(query, {
        ...toModelFields({ id, handle: 'h', ...newBike() }),
        writer: ['mallory', 'https://elsewhere.example/'],
      });
      expect(written.id).toBe(id);
      expect((await session.query(`SELECT current_setting('bike_catalog.writer', true) AS writer`)).rows).toEqual([
        { writer: '' },
      ]);
      await session.query(`UPDATE bikes SET title = 'Next' WHERE id = $1`, [id]);
      expect(await writersOf([id])).toEqual([
        change(id, 'create', 'mallory', provenBy('https://elsewhere.example/')),
        change(id, 'update', `sql:${role}`, BY_THE_DATABASE),
      ]);
    } finally {
      await session.end();
    }
  });

  it('the feed does not show the writer', async () => {
    // From where the feed stands now (a list's cursor), until the create comes: a transaction of
    // another test, in another database of the same server, may hold it back a moment.
    const since = (await fetch(`${svc.baseUrl}/bikes/all`)).headers.get('catalog-cursor') as string;
    const bike = await client(svc.baseUrl, alice).create();
    const changes = await waitFor('the create in the feed', async () => {
      const res = await fetch(`${svc.baseUrl}/bikes/changes?${new URLSearchParams({ since })}`);
      expect(res.status).toBe(200);
      const page = (await res.json()) as Row[];
      return page.some((entry) => entry.id === bike.id) ? page : undefined;
    });
    expect(changes.find((entry) => entry.id === bike.id)).toEqual({
      cursor: expect.any(String),
      type: 'upsert',
      id: bike.id,
      bike,
    });
    expect(JSON.stringify(changes)).not.toContain('alice');
  });

  it('docs/reporting.md\'s "who changed this price": each price the bike was given, by whom and how proven, in order', async () => {
    const trek = priced(4000, 4500, 'USD', { title: 'Trek Domane SL 5' });
    const bike = await client(svc.baseUrl, alice).create(trek);
    expect(bike.handle).toBe('trek-domane-sl-5');
    const other = await client(svc.baseUrl, alice).create(priced(100, 200, 'USD', { title: 'Another Bike' }));
    const patch = (token: string, id: string, body: object) =>
      client(svc.baseUrl, token).request('PATCH', `/bikes/${id}`, { body });
    expect((await patch(ops, bike.id, { priceRange: priced(3800, 4500).priceRange })).status).toBe(200);
    expect((await patch(anonymous, bike.id, { title: 'Trek Domane SL 5 (2026)' })).status).toBe(200); // no price change
    expect((await patch(ops, other.id, { priceRange: priced(90, 200).priceRange })).status).toBe(200); // another bike
    expect((await patch(shop, bike.id, { priceRange: priced(3500, 4200, 'EUR').priceRange })).status).toBe(200);
    await db.query('UPDATE bikes SET max_price_amount = 4100 WHERE id = $1', [bike.id]);

    const sql = fs.readFileSync(path.join(__dirname, 'reports', 'who-changed-the-price.sql'), 'utf8');
    const rows = (await db.query(sql)).rows as Row[];
    for (const row of rows) expect(row.changed_at).toBeInstanceOf(Date);
    expect(rows.map(({ changed_at, ...row }) => row)).toEqual(
      [
        ['alice', 'claimed', [null, null, null], ['USD', 4000, 4500]],
        ['ops', OPERATOR, ['USD', 4000, 4500], ['USD', 3800, 4500]],
        ['shop-sync', ISSUER, ['USD', 3800, 4500], ['EUR', 3500, 4200]],
        [`sql:${role}`, 'database', ['EUR', 3500, 4200], ['EUR', 3500, 4100]],
      ].map(([changedBy, vouchedBy, from, to]) => ({
        bike_id: bike.id,
        changed_by: changedBy,
        vouched_by: vouchedBy,
        currency_from: (from as unknown[])[0],
        min_price_from: (from as unknown[])[1],
        max_price_from: (from as unknown[])[2],
        currency_to: (to as unknown[])[0],
        min_price_to: (to as unknown[])[1],
        max_price_to: (to as unknown[])[2],
      })),
    );
  });
});
