import { Client } from 'pg';
import type { Bike } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import { tampered } from '../support/tamper';
import { pruneChanges } from '../../src/feed/changes';
import { type LogPosition, pruneUntilPast } from '../support/pruning';
import { insertBike, sessionBeside } from '../support/sessions';
import { startTestService, type TestService } from '../support/service';
import { PATIENCE_MS, waitFor } from '../support/wait';

/**
 * GET /bikes/changes (docs/reference/browse-and-sync.md#the-change-feed): what changed, in order, deletions
 * included, from a cursor the service gave; every list says where in the feed it stands.
 */

interface Change {
  cursor: string;
  type: 'upsert' | 'delete';
  id: string;
  bike?: Bike;
}

describe('GET /bikes/changes', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;
  let sql: Client;

  beforeAll(async () => {
    svc = await startTestService();
    api = client(svc.baseUrl, await svc.token());
    sql = new Client({ connectionString: svc.databaseUrl });
    await sql.connect();
  });
  afterAll(async () => {
    await sql.end();
    await svc.stop();
  });

  async function changes(
    since?: string,
    limit?: number,
  ): Promise<{ status: number; changes: Change[]; cursor: string }> {
    const params = new URLSearchParams();
    if (since !== undefined) params.set('since', since);
    if (limit !== undefined) params.set('limit', String(limit));
    const res = await api.request('GET', `/bikes/changes?${params}`);
    return {
      status: res.status,
      changes: res.status === 200 ? ((await res.json()) as Change[]) : [],
      cursor: res.headers.get('catalog-cursor') ?? '',
    };
  }

  /**
   * Every change from `since` on, page by page, until caught up and `until` holds of what came.
   * (A change comes once no transaction that could write one before it runs: a transaction that
   * writes in another database of the same server, another test's, holds the feed back a moment.)
   */
  async function follow(
    since?: string,
    { limit = 3, until = () => true }: { limit?: number; until?: (changes: Change[]) => boolean } = {},
  ): Promise<{ changes: Change[]; cursor?: string }> {
    const all: Change[] = [];
    let cursor = since;
    const deadline = Date.now() + PATIENCE_MS;
    for (;;) {
      const page = await changes(cursor, limit);
      expect(page.status).toBe(200);
      if (page.changes.length === 0) {
        if (until(all)) return { changes: all, cursor };
        if (Date.now() > deadline) throw new Error(`the feed did not give what was awaited: ${all.length} changes`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      all.push(...page.changes);
      if (page.changes.length > 0) cursor = page.changes[page.changes.length - 1].cursor;
    }
  }

  /** Where the feed stands now: the cursor a list gives. */
  const now = async () => (await api.request('GET', '/bikes/all')).headers.get('catalog-cursor') as string;

  /** Until the change that made `bike` as it is has come. */
  const reached = (bike: Bike) => (seen: Change[]) =>
    seen.some((change) => JSON.stringify(change.bike) === JSON.stringify(bike));

  /** Until a delete of `id` has come. */
  const deleted = (id: string) => (seen: Change[]) =>
    seen.some((change) => change.type === 'delete' && change.id === id);

  /** The catalog a follower builds by applying `changes` in order. */
  function replay(changes: Change[], onto = new Map<string, Bike>()): Map<string, Bike> {
    for (const change of changes) {
      if (change.type === 'upsert') onto.set(change.id, change.bike as Bike);
      else onto.delete(change.id);
    }
    return onto;
  }

  async function expectCatalogIs(map: Map<string, Bike>): Promise<void> {
    const all = (await (await api.request('GET', '/bikes/all')).json()) as Bike[];
    expect(map.size).toBe(all.length);
    for (const bike of all) expect(JSON.stringify(map.get(bike.id))).toBe(JSON.stringify(bike));
  }

  it('gives every create, update and delete in order, each an upsert of the bike as it is after it or a delete of its id', async () => {
    const start = await now();
    const bike = await api.create(newBike());
    const patched = (await (
      await api.request('PATCH', `/bikes/${bike.id}`, { body: { vendor: 'Other' } })
    ).json()) as Bike;
    await api.request('DELETE', `/bikes/${bike.id}`);
    const { changes: seen } = await follow(start, { until: deleted(bike.id) });
    expect(seen.map(({ type, id, bike: after }) => ({ type, id, bike: after }))).toEqual([
      { type: 'upsert', id: bike.id, bike },
      { type: 'upsert', id: bike.id, bike: patched },
      { type: 'delete', id: bike.id, bike: undefined },
    ]);
    expect(new Set(seen.map((change) => change.cursor)).size).toBe(3);
  });

  it('carries no field the bike does not have: one a create or a patch sent is in no change (docs/reference/reads-and-writes.md#create)', async () => {
    const start = await now();
    const fields = newBike();
    const created = await api.request('POST', '/bikes/', {
      body: { ...fields, color: 'red', priceRange: { ...fields.priceRange, tax: 7 } },
    });
    expect(created.status).toBe(200);
    const bike = (await created.json()) as Bike;
    const patched = await api.request('PATCH', `/bikes/${bike.id}`, { body: { vendor: 'Other', color: 'blue' } });
    expect(patched.status).toBe(200);
    const after = (await patched.json()) as Bike;
    await api.request('DELETE', `/bikes/${bike.id}`);
    const { changes: seen } = await follow(start, { until: deleted(bike.id) });
    const upserts = seen.filter((change) => change.id === bike.id && change.type === 'upsert');
    expect(upserts.map((change) => JSON.stringify(change.bike))).toEqual([JSON.stringify(bike), JSON.stringify(after)]);
    expect(JSON.stringify(seen.filter((change) => change.id === bike.id))).not.toMatch(/color|tax|red|blue/);
  });

  it('from its start, rebuilds exactly /bikes/all, byte for byte; [] means caught up', async () => {
    for (let i = 0; i < 4; i++) await api.create(newBike());
    const gone = await api.create(newBike());
    await api.request('DELETE', `/bikes/${gone.id}`);
    const { changes: all, cursor } = await follow(undefined, { limit: 4, until: deleted(gone.id) });
    await expectCatalogIs(replay(all));
    expect((await changes(cursor)).changes).toEqual([]);
  });

  it('after a list, from its Catalog-Cursor: the changes made since, none of what the list had, none missed', async () => {
    await api.create(newBike());
    const listed = await api.request('GET', '/bikes/all');
    const cursor = listed.headers.get('catalog-cursor') as string;
    const before = new Map(((await listed.json()) as Bike[]).map((bike) => [bike.id, bike]));
    const added = await api.create(newBike());
    const removed = [...before.keys()][0];
    await api.request('DELETE', `/bikes/${removed}`);
    const { changes: since } = await follow(cursor, { until: deleted(removed) });
    expect(since.map((change) => [change.type, change.id])).toEqual([
      ['upsert', added.id],
      ['delete', removed],
    ]);
    await expectCatalogIs(replay(since, before));
    // A search says where it stands too; a 304 does not (RFC 9110 15.4.5): the copy it confirms
    // came with its own cursor, from which nothing has changed.
    const search = await api.request('GET', `/bikes/search/by-title?query=${encodeURIComponent(added.title)}`);
    expect(search.headers.get('catalog-cursor')).toBeTruthy();
    const list = await api.request('GET', '/bikes/all');
    const tag = list.headers.get('etag') as string;
    const unchanged = await api.request('GET', '/bikes/all', { headers: { 'if-none-match': tag } });
    expect(unchanged.status).toBe(304);
    expect(unchanged.headers.get('catalog-cursor')).toBeNull();
    expect((await follow(list.headers.get('catalog-cursor') as string)).changes).toEqual([]);
  });

  it('holds a change back while a transaction that began writing before it runs, then gives both, in order', async () => {
    const start = await now();
    const early = await api.create(newBike());
    const long = new Client({ connectionString: svc.databaseUrl });
    await long.connect();
    // Written beside it on a session of another catalog version slot (a service connection might
    // share the long transaction's, and wait for it).
    const writer = await sessionBeside(svc.databaseUrl, long);
    try {
      await long.query('BEGIN');
      await long.query(`UPDATE bikes SET vendor = 'Long' WHERE id = $1`, [early.id]);
      // Committed first, by a transaction that began writing after the long one.
      const laterId = await insertBike(writer, newBike());
      const later = (await (await api.request('GET', `/bikes/${laterId}`)).json()) as Bike;
      const held = await follow(start, { until: (seen) => seen.length > 0 });
      expect(held.changes.map((change) => change.id)).toEqual([early.id]);
      await long.query('COMMIT');
      const seen = (await follow(start, { until: reached(later) })).changes;
      expect(seen.map((change) => [change.id, change.bike?.vendor])).toEqual([
        [early.id, early.vendor],
        [early.id, 'Long'],
        [later.id, later.vendor],
      ]);
    } finally {
      await long.end();
      await writer.end();
    }
  });

  it("keeps a bike's changes in the order they committed, even when a transaction that began first writes it after another did", async () => {
    const start = await now();
    const [x, y] = [await api.create(newBike()), await api.create(newBike())];
    const long = new Client({ connectionString: svc.databaseUrl });
    await long.connect();
    const writer = await sessionBeside(svc.databaseUrl, long);
    try {
      await long.query('BEGIN');
      await long.query(`UPDATE bikes SET vendor = 'First' WHERE id = $1`, [x.id]);
      // A later transaction changes y and commits (on a session of another catalog version slot);
      // then the long one, on top of it.
      await writer.query(`UPDATE bikes SET vendor = 'Second' WHERE id = $1`, [y.id]);
      await long.query(`UPDATE bikes SET vendor = 'Third' WHERE id = $1`, [y.id]);
      await long.query('COMMIT');
    } finally {
      await long.end();
      await writer.end();
    }
    const third = (seen: Change[]) => seen.some((change) => change.bike?.vendor === 'Third');
    const seen = (await follow(start, { until: third })).changes.filter((change) => change.id === y.id);
    expect(seen.map((change) => change.bike?.vendor)).toEqual([y.vendor, 'Second', 'Third']);
    expect(((await (await api.request('GET', `/bikes/${y.id}`)).json()) as Bike).vendor).toBe('Third');
  });

  it('refuses a cursor that is not one of ours (tampered, made up) and a limit out of range with 400, naming which', async () => {
    const cursor = (await changes()).cursor;
    const [data, mac] = cursor.split('.');
    for (const since of [tampered(cursor), 'not-a-cursor', `${data.slice(1)}.${mac}`]) {
      const res = await api.request('GET', `/bikes/changes?since=${encodeURIComponent(since)}`);
      expect({ since, status: res.status, field: res.headers.get('x-invalid-field') }).toEqual({
        since,
        status: 400,
        field: 'query.since',
      });
    }
    for (const limit of ['0', '1001', 'ten', '-1']) {
      const res = await api.request('GET', `/bikes/changes?limit=${limit}`);
      expect({ limit, status: res.status, field: res.headers.get('x-invalid-field') }).toEqual({
        limit,
        status: 400,
        field: 'query.limit',
      });
    }
  });

  it('answers 410 to a cursor of another catalog, and to one from before what pruning kept', async () => {
    const other = await startTestService({ jwtSecret: svc.jwtSecret });
    try {
      const foreign = (await fetch(`${other.baseUrl}/bikes/all`)).headers.get('catalog-cursor') as string;
      expect((await changes(foreign)).status).toBe(410);
    } finally {
      await other.stop();
    }
    // As an operator who keeps the history no longer than the feed (HISTORY_RETENTION_DAYS=30).
    await sql.query('UPDATE bike_changes_pruning SET history_retention_days = 30');
    const old = (await changes()).cursor;
    const bike = await api.create(newBike());
    await api.request('DELETE', `/bikes/${bike.id}`);
    // Everything past the retention (30 days, docs/reference/browse-and-sync.md#the-change-feed): the delete goes,
    // and with it what a cursor before it could follow.
    await sql.query(`UPDATE bike_changes SET changed_at = changed_at - interval '31 days'`);
    const [deleted] = (
      await sql.query<LogPosition>(`SELECT txid, change_id FROM bike_changes WHERE bike_id = $1 AND kind = 'delete'`, [
        bike.id,
      ])
    ).rows;
    await pruneUntilPast(sql, `now() - interval '30 days'`, deleted);
    expect((await changes(old)).status).toBe(410);
    // Before the horizon, the log keeps the latest change of each bike there is, and nothing else.
    const { rows } = await sql.query<{ bikes: string; changes: string }>(
      'SELECT (SELECT count(*) FROM bikes) AS bikes, (SELECT count(*) FROM bike_changes) AS changes',
    );
    expect(rows[0].changes).toBe(rows[0].bikes);
    // From the start of what is kept, the catalog is rebuilt all the same.
    await expectCatalogIs(replay((await follow(undefined, { limit: 50 })).changes));
  });

  it("prunes what is past the retention and no follower needs: superseded changes and deletes, never a live bike's latest", async () => {
    await sql.query('UPDATE bike_changes_pruning SET history_retention_days = 30');
    const [kept, patched, gone] = [
      await api.create(newBike()),
      await api.create(newBike()),
      await api.create(newBike()),
    ];
    await api.request('PATCH', `/bikes/${patched.id}`, { body: { totalInventory: 3 } });
    await api.request('DELETE', `/bikes/${gone.id}`);
    const ids = [kept.id, patched.id, gone.id];
    // Everything so far is 31 days old; then one more change, within the retention.
    await sql.query(`UPDATE bike_changes SET changed_at = changed_at - interval '31 days'`);
    const latest = (await (
      await api.request('PATCH', `/bikes/${kept.id}`, { body: { totalInventory: 4 } })
    ).json()) as Bike;
    const logOf = async () =>
      (
        await sql.query<{ bike_id: string; kind: string; total_inventory: number | null }>(
          'SELECT bike_id, kind, total_inventory FROM bike_changes WHERE bike_id = ANY($1) ORDER BY txid, change_id',
          [ids],
        )
      ).rows.map((row) => [ids.indexOf(row.bike_id), row.kind, row.total_inventory]);
    expect(await logOf()).toHaveLength(6);
    const query = (text: string, values: unknown[]) => sql.query(text, values);
    await waitFor(
      'pruning to reach the change within the retention',
      async () => ((await pruneChanges(query, 30), (await logOf()).length === 3) ? true : undefined),
      { everyMs: 200 },
    );
    // kept: its create stays (the patch within the retention stops pruning there), and the patch.
    expect(await logOf()).toEqual([
      [0, 'create', kept.totalInventory],
      [1, 'update', 3],
      [0, 'update', 4],
    ]);
    // The follower waits for that last change: another test's open transaction may hold it back.
    await expectCatalogIs(replay((await follow(undefined, { limit: 50, until: reached(latest) })).changes));
  });

  it('keeps the history the feed has passed until HISTORY_RETENTION_DAYS (unset: for ever), a cursor from before the horizon 410 all the same', async () => {
    await sql.query('UPDATE bike_changes_pruning SET history_retention_days = NULL');
    const old = (await changes()).cursor;
    const bike = await api.create(newBike());
    await api.request('PATCH', `/bikes/${bike.id}`, { body: { totalInventory: 99 } });
    await api.request('DELETE', `/bikes/${bike.id}`);
    const historyOf = async () =>
      (
        await sql.query<{ kind: string }>('SELECT kind FROM bike_changes WHERE bike_id = $1 ORDER BY txid, change_id', [
          bike.id,
        ])
      ).rows.map((row) => row.kind);
    const pruneAll = () => sql.query(`SELECT * FROM prune_bike_changes(now(), 1000000)`);
    await sql.query(`UPDATE bike_changes SET changed_at = changed_at - interval '31 days'`);
    const [deleted] = (
      await sql.query<LogPosition>(`SELECT txid, change_id FROM bike_changes WHERE bike_id = $1 AND kind = 'delete'`, [
        bike.id,
      ])
    ).rows;
    await pruneUntilPast(sql, `now() - interval '30 days'`, deleted);
    // The feed's horizon has passed them: a cursor from before is 410, as it was.
    expect((await changes(old)).status).toBe(410);
    await pruneAll();
    expect(await historyOf()).toEqual(['create', 'update', 'delete']);

    // HISTORY_RETENTION_DAYS=60, as a start that migrates keeps it: kept while younger, gone once older.
    const sixty = await startTestService({
      databaseUrl: svc.databaseUrl,
      jwtSecret: svc.jwtSecret,
      env: { HISTORY_RETENTION_DAYS: '60' },
    });
    await sixty.stop();
    const { rows } = await sql.query('SELECT retention_days, history_retention_days FROM bike_changes_pruning');
    expect(rows).toEqual([{ retention_days: 30, history_retention_days: 60 }]);
    await pruneAll();
    expect(await historyOf()).toEqual(['create', 'update', 'delete']);
    // 61 days old, with every change before them.
    await sql.query(`UPDATE bike_changes SET changed_at = changed_at - interval '30 days'`);
    await waitFor('history pruning to reach the bike', async () => {
      await pruneAll();
      return (await historyOf()).length === 0 || undefined;
    });
    // Never past the feed's horizon.
    const [positions] = (
      await sql.query<{ behind: boolean }>(
        'SELECT (history_txid, history_change_id) <= (horizon_txid, horizon_change_id) AS behind FROM bike_changes_pruning',
      )
    ).rows;
    expect(positions.behind).toBe(true);
    await sql.query('UPDATE bike_changes_pruning SET history_retention_days = NULL');
  });

  it('answers 503 while a capture trigger is off, and 410 to a cursor from before it was switched off and on', async () => {
    const cursor = (await changes()).cursor;
    await sql.query('ALTER TABLE bikes DISABLE TRIGGER bikes_changes_on_update');
    try {
      expect((await changes(cursor)).status).toBe(503);
    } finally {
      await sql.query('ALTER TABLE bikes ENABLE ALWAYS TRIGGER bikes_changes_on_update');
    }
    expect((await changes(cursor)).status).toBe(410);
  });
});
