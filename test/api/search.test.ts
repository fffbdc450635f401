import { randomUUID } from 'node:crypto';
import { type Bike, expectExactShape, expectPlainError, newBike, useApi } from './helpers';

describe('GET /bikes/search/by-title', () => {
  const api = useApi();
  /** A marker unique to one test, so its bikes are the only ones that can match it. */
  const tag = () => `t${randomUUID().slice(0, 8)}`;

  async function createTitled(...titles: string[]): Promise<Bike[]> {
    const bikes: Bike[] = [];
    for (const title of titles) bikes.push(await api.create(newBike({ title })));
    return bikes;
  }

  it('answers 200 with a JSON array of the bikes whose title contains the query, each with its ten fields', async () => {
    const t = tag();
    const [a, b] = await createTitled(`${t} Mountain Explorer`, `Urban ${t} Commuter`, `Other ${tag()}`);
    const res = await api.request('GET', `/bikes/search/by-title?query=${t}`, { token: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.json()).toEqual([a, b]);
    for (const bike of res.json<unknown[]>()) expectExactShape(bike);
  });

  it('matches anywhere in the title: start, middle, end, and the whole title', async () => {
    const t = tag();
    const [start, middle, end] = await createTitled(`${t}XYZ start`, `mid ${t}XYZ dle`, `end ${t}XYZ`);
    expect(await api.search(`${t}XYZ`)).toEqual([start, middle, end]);
    expect(await api.search(middle.title)).toEqual([middle]);
  });

  it('is case-sensitive: a lowercase term does not match an uppercase occurrence, nor the reverse', async () => {
    const t = tag();
    const [upper, lower, shout] = await createTitled(`${t} Mountain`, `${t} mountain`, `${t} MOUNTAIN`);
    expect(await api.search(`${t} Mountain`)).toEqual([upper]);
    expect(await api.search(`${t} mountain`)).toEqual([lower]);
    expect(await api.search(`${t} MOUNTAIN`)).toEqual([shout]);
    expect(await api.search(`${t} mOUNTAIN`)).toEqual([]);
  });

  it('is case-sensitive beyond ASCII', async () => {
    const t = tag();
    const [upper] = await createTitled(`${t} ÉLAN Road`);
    expect(await api.search(`${t} ÉLAN`)).toEqual([upper]);
    expect(await api.search(`${t} élan`)).toEqual([]);
  });

  it('lists the matches oldest first', async () => {
    const t = tag();
    const bikes = await createTitled(`c ${t}`, `a ${t}`, `b ${t}`, `a ${t} again`);
    expect(await api.search(t)).toEqual(bikes);
  });

  it('searches the title only: not the handle, description or vendor', async () => {
    const t = tag();
    await api.create(newBike({ title: `Split Title ${t}`, description: `desc-${t}-only`, vendor: `vendor-${t}-only` }));
    expect(await api.search(`desc-${t}`)).toEqual([]);
    expect(await api.search(`vendor-${t}`)).toEqual([]);
    expect(await api.search(`split-title-${t}`)).toEqual([]);
  });

  it('when nothing matches, it answers 200 with an empty array', async () => {
    const res = await api.request('GET', `/bikes/search/by-title?query=nothing-${tag()}`, { token: null });
    expect(res.status).toBe(200);
    expect(res.json()).toEqual([]);
  });

  it('when the query is missing or empty, it answers every bike, oldest first (the same as /bikes/all)', async () => {
    await createTitled(`any ${tag()}`, `any ${tag()}`);
    const all = await api.all();
    expect(all.length).toBeGreaterThanOrEqual(2);
    for (const path of ['/bikes/search/by-title', '/bikes/search/by-title?query=', '/bikes/search/by-title?query']) {
      const res = await api.request('GET', path, { token: null });
      expect(res.status).toBe(200);
      expect(res.json()).toEqual(all);
    }
  });

  describe('%, _ and \\ match themselves, literally', () => {
    it('a % matches only a percent sign', async () => {
      const t = tag();
      const [percent] = await createTitled(`${t} 100% Carbon`, `${t} 100 Carbon`, `${t} 1000 Carbon`);
      expect(await api.search(`${t} 100%`)).toEqual([percent]);
      expect(await api.search(`${t} 100% Carbon`)).toEqual([percent]);
      expect(await api.search(`${t} 10%`)).toEqual([]);
    });

    it('a lone % matches only titles holding a percent sign, not every title', async () => {
      const t = tag();
      const [, percent] = await createTitled(`${t} no percent here`, `${t} 50% off`);
      const found = await api.search('%');
      for (const bike of found) expect(bike.title).toContain('%');
      expect(found.filter((b) => b.title.startsWith(t))).toEqual([percent]);
    });

    it('an _ matches only an underscore, not any one character', async () => {
      const t = tag();
      const [underscore] = await createTitled(`${t} Road_Bike`, `${t} RoadXBike`, `${t} Road-Bike`);
      expect(await api.search(`${t} Road_Bike`)).toEqual([underscore]);
      expect(await api.search(`d_B`).then((found) => found.filter((b) => b.title.startsWith(t)))).toEqual([underscore]);
      for (const bike of await api.search('_')) expect(bike.title).toContain('_');
    });

    it('a \\ matches only a backslash, and does not escape what follows', async () => {
      const t = tag();
      const [slashPercent, slash, percent] = await createTitled(
        `${t} A\\%B`,
        `${t} Back\\Slash`,
        `${t} A%B`,
        `${t} BackSlash`,
      );
      expect(await api.search(`${t} Back\\Slash`)).toEqual([slash]);
      expect(await api.search(`${t} A\\%B`)).toEqual([slashPercent]);
      expect(await api.search(`${t} A%B`)).toEqual([percent]);
      const backslashes = (await api.search('\\')).filter((b) => b.title.startsWith(t));
      expect(backslashes).toEqual([slashPercent, slash]);
    });

    it('a trailing \\ and a doubled \\\\ match literally', async () => {
      const t = tag();
      const [trailing, doubled] = await createTitled(`${t} ends with \\`, `${t} two \\\\ slashes`);
      expect(await api.search(`${t} ends with \\`)).toEqual([trailing]);
      expect(await api.search(`${t} two \\\\`)).toEqual([doubled]);
      expect((await api.search('\\\\')).filter((b) => b.title.startsWith(t))).toEqual([doubled]);
    });

    it('SQL quotes and LIKE syntax in the query are just text', async () => {
      const t = tag();
      const [quoted] = await createTitled(`${t} O'Neil [a-z]* "x"`);
      expect(await api.search(`${t} O'Neil [a-z]* "x"`)).toEqual([quoted]);
      expect(await api.search(`${t} O'Neil [b-z]`)).toEqual([]);
      expect(await api.search(`' OR '1'='1`)).toEqual([]);
    });
  });

  it('decodes the query: + and %20 are spaces, and spaces are matched exactly (Fat  Bike)', async () => {
    const t = tag();
    const [fat] = await createTitled(`${t} Fat  Bike`, `${t} Fat Bike`);
    const path = `/bikes/search/by-title?query=${t}+Fat%20%20Bike`;
    expect((await api.request('GET', path, { token: null })).json()).toEqual([fat]);
  });

  it('finds bikes by their current title after a PATCH or PUT, not by the old one', async () => {
    const t = tag();
    const [patched, replaced] = await createTitled(`${t} old one`, `${t} old two`);
    await api.request('PATCH', `/bikes/${patched.id}`, { json: { title: `${t} new one` } });
    await api.request('PUT', `/bikes/${replaced.id}`, {
      json: { ...newBike({ title: `${t} new two` }), id: replaced.id, handle: 'h' },
    });
    expect((await api.search(`${t} old`)).map((b) => b.id)).toEqual([]);
    expect((await api.search(`${t} new`)).map((b) => b.id)).toEqual([patched.id, replaced.id]);
  });

  it('does not list a deleted bike', async () => {
    const t = tag();
    const [gone, kept] = await createTitled(`${t} gone`, `${t} kept`);
    await api.request('DELETE', `/bikes/${gone.id}`);
    expect(await api.search(t)).toEqual([kept]);
  });

  it('refuses a query parameter it does not know, 400 naming it (docs/reference/http.md#query-parameters)', async () => {
    const t = tag();
    await createTitled(`${t} params`);
    const res = await api.request('GET', `/bikes/search/by-title?query=${t}&title=zzz`, { token: null });
    expectPlainError(res, 400, 'Bad Request');
    expect(res.headers.get('x-invalid-field')).toBe('query.title');
  });

  describe('a failed search answers 400', () => {
    it('when query is given more than once', async () => {
      const t = tag();
      await createTitled(`${t} twice`);
      const res = await api.request('GET', `/bikes/search/by-title?query=${t}&query=${t}`, { token: null });
      expectPlainError(res, 400, 'Bad Request');
    });

    it('when query is given more than once, even empty', async () => {
      expect((await api.request('GET', '/bikes/search/by-title?query=&query=', { token: null })).status).toBe(400);
    });

    it.each(['%00', 'abc%00', '%00abc', 'a%00b'])('when query contains U+0000 (%s)', async (query) => {
      const res = await api.request('GET', `/bikes/search/by-title?query=${query}`, { token: null });
      expectPlainError(res, 400, 'Bad Request');
    });
  });

  it('copes with a long query and odd encodings without an error', async () => {
    for (const query of ['x'.repeat(20_000), '%ZZ', '%E0%A4%A', '%ED%A0%80', '%F0%9F%9A%B2']) {
      const res = await api.request('GET', `/bikes/search/by-title?query=${query}`, { token: null });
      expect(res.status).toBe(200);
      expect(Array.isArray(res.json())).toBe(true);
    }
  });

  it('finds a title by an emoji in it', async () => {
    const t = tag();
    const [bike] = await createTitled(`${t} 🚲 bike`);
    expect(await api.search(`${t} 🚲`)).toEqual([bike]);
  });

  it('needs no token, ignores a bad one, and changes nothing', async () => {
    const t = tag();
    const [bike] = await createTitled(`${t} tokenless`);
    const before = await api.all();
    const res = await api.request('GET', `/bikes/search/by-title?query=${t}`, { token: 'garbage' });
    expect(res.json()).toEqual([bike]);
    expect(await api.all()).toEqual(before);
  });
});
