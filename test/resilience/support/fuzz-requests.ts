import fc from 'fast-check';
import { bikeFields as bikeDefinition } from '../../../src/bikes/bike';
import { nullablePaths, type Shape, shapeOf } from '../../support/bikes';
import type { RawRequest } from './raw-http';

/**
 * Generated hostile requests for every route, each with what the fuzz test needs to judge the
 * answer: which body was meant, whether it was a valid bike, what credentials it carried.
 */

export interface World {
  /** A token from POST /api/user. */
  token: string;
  /** A token signed with another secret. */
  foreignToken: string;
  /** Ids of bikes created before the run. */
  ids: string[];
  /** Well-formed ids that have no bike at the start. */
  freeIds: string[];
  handles: string[];
}

type Auth = 'valid' | 'missing' | 'invalid';
export type BodyKind =
  | 'none'
  | 'valid-create'
  | 'valid-replace'
  | 'valid-patch'
  | 'mutated-bike'
  | 'nulled-bike'
  | 'retyped-bike'
  | 'random-json'
  | 'prototype'
  | 'deep'
  | 'malformed'
  | 'form'
  | 'invalid-utf8'
  | 'oversized';

export interface FuzzCase {
  request: RawRequest;
  auth: Auth;
  bodyKind: BodyKind;
  /** The body as the server's JSON.parse sees it, when it is JSON text that parses. */
  sentJson?: unknown;
  /** Declared as JSON (application/json, utf-8) with nothing that changes how it is read. */
  plainJson: boolean;
  /** A bike write's body with a member null or of a type its field does not take: every write route refuses it. */
  refused: boolean;
}

/** A value written into JSON text verbatim: numbers JSON.stringify cannot produce, deep nesting. */
class Raw {
  constructor(readonly text: string) {}
}

function serialize(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map(serialize).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .map((key) => `${JSON.stringify(key)}:${serialize((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** An object with an own property named `__proto__` (a literal would set the prototype instead). */
function withOwn(key: string, value: unknown, rest: Record<string, unknown> = {}): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  return Object.assign(object, rest);
}

// ---------------------------------------------------------------- values

const storableText = fc
  .oneof(
    { weight: 10, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
    { weight: 5, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '',
        ' ',
        'Fat  Bike',
        'ÉLAN Road',
        '100% _off_ \\',
        "O'Brien; DROP TABLE bikes; --",
        '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
        '\u202e',
        '\ufeff',
      ),
    },
    // Long enough to break a b-tree index on the column (a row of more than 2704 bytes).
    { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1500, maxLength: 6000 }) },
  )
  .filter((s) => !s.includes('\u0000'));

const finiteNumber = fc.oneof(
  { weight: 5, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 3, arbitrary: fc.integer() },
  {
    weight: 2,
    arbitrary: fc.constantFrom(0, -1, 1e308, -1e308, 5e-324, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, 0.1, 499.99),
  },
);

const REMOVE = Symbol('remove');

/** Every member of the definition's bike body, by path: each object, then its members, in order. */
const FIELD_PATHS: string[][] = (function paths(shape: Shape, prefix: string[]): string[][] {
  return Object.entries(shape).flatMap(([key, field]) => [
    [...prefix, key],
    ...(typeof field === 'string' ? [] : paths(field, [...prefix, key])),
  ]);
})(shapeOf(bikeDefinition), []);

/** The members that may be null: the definition's optional fields (`.nullable()`). */
const NULLABLE = new Set(nullablePaths(bikeDefinition));
const nullable = (path: string[]) => NULLABLE.has(path.join('.'));

/** A value of a leaf's type (the definition's `string`, `number`, `boolean`). */
const leafValue: Record<string, fc.Arbitrary<unknown>> = {
  string: storableText,
  number: finiteNumber,
  boolean: fc.boolean(),
};

/** A JSON value of each type but `type` ('object' for a member that holds fields), null among them. */
function otherType(type: string): fc.Arbitrary<unknown> {
  const byType: Record<string, fc.Arbitrary<unknown>> = {
    null: fc.constant(null),
    string: fc.oneof(storableText, fc.constantFrom('5', 'true', 'null', '{}')),
    number: fc.oneof(finiteNumber, fc.constantFrom(0, 1)),
    boolean: fc.boolean(),
    array: fc.oneof(fc.constant([]), fc.array(fc.jsonValue({ maxDepth: 1 }), { minLength: 1, maxLength: 3 })),
    object: fc.oneof(fc.constant({}), fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }))),
  };
  return fc.oneof(...Object.entries(byType).flatMap(([name, arbitrary]) => (name === type ? [] : [arbitrary])));
}

/**
 * A valid bike body, built from the definition's shape (src/bikes/bike.ts), so a field added
 * there is drawn at once: each optional field is null half the time, and a tenth of the time
 * left out (a create or a replacement stores null then).
 */
function validFields(shape: Shape, prefix: string[] = []): fc.Arbitrary<Record<string, unknown>> {
  const members = Object.entries(shape).map(([key, field]) => {
    const path = [...prefix, key];
    const value = typeof field === 'string' ? leafValue[field] : validFields(field, path);
    if (!value) throw new Error(`fuzz-requests.ts draws no ${String(field)} (the definition's ${path.join('.')})`);
    const drawn = nullable(path)
      ? fc.oneof(
          { weight: 9, arbitrary: value },
          { weight: 9, arbitrary: fc.constant(null) },
          { weight: 2, arbitrary: fc.constant(REMOVE) },
        )
      : value;
    return drawn.map((v) => [key, v] as const);
  });
  return fc.tuple(...members).map((entries) => Object.fromEntries(entries.filter(([, v]) => v !== REMOVE)));
}

const bikeFields = validFields(shapeOf(bikeDefinition));

/** The definition's type of a member: a leaf's, or 'object'; a replacement's and a patch's handle is a string. */
function typeAt(path: string[]): string {
  let field: Shape | string = { handle: 'string', ...shapeOf(bikeDefinition) };
  for (const key of path) field = (field as Shape)[key];
  return typeof field === 'string' ? field : 'object';
}

type Write = 'create' | 'replace' | 'patch';

/** The members a write's body may carry: a replacement and a patch carry the handle too (a create's is ignored). */
const membersOf = (as: Write) => (as === 'create' ? FIELD_PATHS : [['handle'], ...FIELD_PATHS]);

/**
 * Members of a write's body, each with a value the definition does not take there: null where
 * the member may not be null, any other JSON type elsewhere. At least one, any of them.
 */
const retypedMembers = (as: Write) =>
  fc.uniqueArray(fc.constantFrom(...membersOf(as)), { minLength: 1, maxLength: 4 }).chain((paths) =>
    fc.tuple(
      ...paths.map((path) => {
        const wrong = otherType(typeAt(path));
        return (nullable(path) ? wrong.filter((value) => value !== null) : wrong).map(
          (value) => [path, value] as const,
        );
      }),
    ),
  );

/** Members of a write's body set to null: valid for an optional field, refused for any other. At least one. */
const nulledMembers = (as: Write) =>
  fc
    .uniqueArray(fc.constantFrom(...membersOf(as)), { minLength: 1, maxLength: 4 })
    .map((paths) => paths.map((path) => [path, null] as const));

/** Whether a body of a write's members, as `retypedMembers` or `nulledMembers` drew them, must be refused. */
const mustRefuse = (changes: ReadonlyArray<readonly [string[], unknown]>) =>
  changes.some(([path, value]) => value !== null || !nullable(path));

const deepNesting = fc
  .tuple(fc.integer({ min: 100, max: 50_000 }), fc.constantFrom('[', '{"a":'))
  .map(
    ([depth, open]) =>
      new Raw(open.repeat(depth) + (open === '[' ? '1' : '1') + (open === '[' ? ']' : '}').repeat(depth)),
  );

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(REMOVE),
  fc.constant(null),
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom('5', 'true', '', '1e3', 5, true, false, 0, [], {}, [1, 2], { amount: 1 }),
  storableText.map((s) => `${s}\u0000${s}`),
  fc.constantFrom('\ud800', 'a\udfffb', '\udbff\udbff', 'x\ud83d'),
  fc.constantFrom(
    new Raw('1e999'),
    new Raw('-1e999'),
    new Raw('1' + '0'.repeat(400)),
    new Raw('1e-400'),
    new Raw('0.' + '1'.repeat(500)),
    new Raw('-0'),
    new Raw('1E308'),
    new Raw('123456789012345678901234567890'),
    new Raw('"\\u0000"'),
    new Raw('"\\ud800"'),
  ),
  deepNesting,
  fc.constant(withOwn('__proto__', { polluted: 'yes' })),
  fc.constant({ constructor: { prototype: { polluted: 'yes' } } }),
);

/** `bike` with each path's member set to its value, or removed (REMOVE); a member inside one no longer an object, skipped. */
function mutate(
  bike: Record<string, unknown>,
  ...changes: ReadonlyArray<readonly [string[], unknown]>
): Record<string, unknown> {
  const copy = structuredClone(bike);
  for (const [path, value] of changes) {
    let target: unknown = copy;
    for (const key of path.slice(0, -1)) target = (target as Record<string, unknown> | undefined)?.[key];
    if (!target || typeof target !== 'object' || Array.isArray(target)) continue;
    const last = path[path.length - 1];
    if (value === REMOVE) delete (target as Record<string, unknown>)[last];
    else (target as Record<string, unknown>)[last] = value;
  }
  return copy;
}

// ---------------------------------------------------------------- bodies

/** Whether `body` has an object at `path` (an optional one may have been left out). */
function holds(body: Record<string, unknown>, path: string[]): boolean {
  let target: unknown = body;
  for (const key of path) target = (target as Record<string, unknown> | undefined)?.[key];
  return !!target && typeof target === 'object' && !Array.isArray(target);
}

/**
 * A valid bike as a write sends it (a create's fields, a replacement's with an id and a handle,
 * or a patch's members, those the changes begin at), then with `changes` made.
 */
function changedWrite(
  world: World,
  kind: 'nulled-bike' | 'retyped-bike',
  changesFor: (as: Write) => fc.Arbitrary<ReadonlyArray<readonly [string[], unknown]>>,
): fc.Arbitrary<Body> {
  return fc
    .constantFrom<Write>('create', 'replace', 'patch')
    .chain((as) =>
      fc.tuple(
        fc.constant(as),
        bikeFields,
        changesFor(as),
        storableText.filter((s) => s.length > 0),
      ),
    )
    .map(([as, bike, changes, handle]) => {
      const whole = as === 'create' ? bike : { id: world.ids[0], handle, ...bike };
      const keys = new Set(changes.map(([[key]]) => key));
      const body = as === 'patch' ? Object.fromEntries(Object.entries(whole).filter(([key]) => keys.has(key))) : whole;
      const made = changes.filter(([path]) => holds(body, path.slice(0, -1)));
      return { ...jsonBody(kind, mutate(body, ...made)), refused: mustRefuse(made) };
    });
}

interface Body {
  kind: BodyKind;
  /** Whether every write route must refuse it (400, or PUT's 404): a member null or of a type its field does not take. */
  refused?: boolean;
  bytes?: Buffer;
  /** JSON text meant as JSON (so a JSON content type is the honest one). */
  json: boolean;
}

function jsonBody(kind: BodyKind, value: unknown): Body {
  return { kind, bytes: Buffer.from(serialize(value), 'utf8'), json: true };
}

type BodyArbitraries = Record<BodyKind, fc.Arbitrary<Body>>;

function bodyArbitraries(world: World): BodyArbitraries {
  const patch = fc
    .tuple(bikeFields, fc.subarray([...Object.keys(shapeOf(bikeDefinition)), 'handle'], { minLength: 0 }), storableText)
    .map(([bike, keys, handle]) => {
      const full: Record<string, unknown> = { ...bike, handle };
      return Object.fromEntries(keys.map((key) => [key, full[key]]));
    });
  return {
    none: fc.constant<Body>({ kind: 'none', json: false }),
    'valid-create': bikeFields.map((bike) => jsonBody('valid-create', bike)),
    'valid-replace': fc
      .tuple(
        bikeFields,
        fc.constantFrom(...world.ids, ...world.freeIds, 'x'),
        storableText.filter((s) => s.length > 0),
      )
      .map(([bike, id, handle]) => jsonBody('valid-replace', { id, handle, ...bike })),
    'valid-patch': patch.map((fields) => jsonBody('valid-patch', fields)),
    'mutated-bike': fc
      .tuple(bikeFields, fc.constantFrom(...FIELD_PATHS), hostileValue, fc.boolean(), storableText)
      .map(([bike, path, value, asReplace, handle]) =>
        jsonBody('mutated-bike', mutate(asReplace ? { id: world.ids[0], handle, ...bike } : bike, [path, value])),
      ),
    // As a create, a replacement or a patch would send it: whole, or a patch's few members.
    'nulled-bike': changedWrite(world, 'nulled-bike', nulledMembers),
    'retyped-bike': changedWrite(world, 'retyped-bike', retypedMembers),
    'random-json': fc.jsonValue({ maxDepth: 5 }).map((value) => jsonBody('random-json', value)),
    prototype: fc.tuple(bikeFields, fc.constantFrom('__proto__', 'constructor', 'prototype')).map(([bike, key]) =>
      jsonBody(
        'prototype',
        key === '__proto__'
          ? withOwn(
              '__proto__',
              { polluted: 'yes', title: 'from the prototype' },
              // And inside each member that holds fields (priceRange).
              Object.fromEntries(
                Object.entries(bike).map(([name, value]) => [
                  name,
                  value && typeof value === 'object'
                    ? withOwn('__proto__', { polluted: 'yes' }, value as Record<string, unknown>)
                    : value,
                ]),
              ),
            )
          : { ...bike, [key]: { prototype: { polluted: 'yes' }, polluted: 'yes' } },
      ),
    ),
    deep: deepNesting.map((raw) => ({ kind: 'deep' as const, bytes: Buffer.from(raw.text), json: true })),
    malformed: fc
      .tuple(
        bikeFields,
        fc.nat(),
        fc.constantFrom('truncate', 'garbage', 'single-quotes', 'nan', 'comment', 'bom', 'trailing-comma', 'empty'),
      )
      .map(([bike, cut, how]) => {
        const text = serialize(bike);
        const broken = {
          truncate: text.slice(0, cut % text.length),
          garbage: `${text}}{`,
          'single-quotes': text.replaceAll('"', "'"),
          nan: text.replace(/"totalInventory":[^,]+/, '"totalInventory":NaN'),
          comment: `/* hi */${text}`,
          bom: `\ufeff${text}`,
          'trailing-comma': `${text.slice(0, -1)},}`,
          empty: '',
        }[how];
        return { kind: 'malformed' as const, bytes: Buffer.from(broken, 'utf8'), json: true };
      }),
    form: fc
      .constantFrom(
        'username=alice',
        'username[]=a&username[]=b',
        '__proto__[polluted]=yes&title=x',
        'constructor[prototype][polluted]=yes',
        '__proto__.polluted=yes',
        'a[b][c][d][e][f][g][h]=1',
        'a[999999]=1',
        `${'x=1&'.repeat(3000)}`,
        'title=Form%20Bike&productType=x',
        'username=%ZZ',
        'username=%00',
        'title=%ED%A0%80',
        'handle=by-form',
      )
      .map((text) => ({ kind: 'form' as const, bytes: Buffer.from(text, 'latin1'), json: false })),
    // A lone surrogate written as raw (WTF-8) bytes, and bytes that are not UTF-8 at all.
    'invalid-utf8': bikeFields.map((bike) => {
      const text = serialize({ ...bike, title: 'SURROGATE' });
      const [before, after] = text.split('SURROGATE');
      return {
        kind: 'invalid-utf8' as const,
        bytes: Buffer.concat([
          Buffer.from(before),
          Buffer.from([0xed, 0xa0, 0x80, 0xff, 0xc0, 0xaf]),
          Buffer.from(after),
        ]),
        json: true,
      };
    }),
    oversized: fc.integer({ min: 1024 * 1024 + 1, max: 3 * 1024 * 1024 }).map((size) => ({
      kind: 'oversized' as const,
      bytes: Buffer.from(`{"title":"${'a'.repeat(size)}"}`),
      json: true,
    })),
  };
}

/** Hostile bodies of every kind, with `favoured` (the bodies the route expects) more often. */
function bodyMix(arbitraries: BodyArbitraries, favoured: Partial<Record<BodyKind, number>> = {}): fc.Arbitrary<Body> {
  const base: Record<BodyKind, number> = {
    none: 6,
    'valid-create': 4,
    'valid-replace': 3,
    'valid-patch': 3,
    'mutated-bike': 14,
    'nulled-bike': 6,
    'retyped-bike': 6,
    'random-json': 8,
    prototype: 5,
    deep: 2,
    malformed: 6,
    form: 4,
    'invalid-utf8': 2,
    oversized: 1,
  };
  return fc.oneof(
    ...(Object.keys(base) as BodyKind[]).map((kind) => ({
      weight: base[kind] + (favoured[kind] ?? 0),
      arbitrary: arbitraries[kind],
    })),
  );
}

// ---------------------------------------------------------------- targets

const badEncoding = fc.constantFrom(
  '%ZZ',
  '%',
  '%E0%A4%A',
  '%ED%A0%80',
  '%C0%AF',
  '%FF',
  '%00',
  '%2F',
  '%25',
  '..',
  '.',
  '%2e%2e',
  '%u0041',
);

const longSegment = fc.integer({ min: 2_000, max: 300_000 }).map((n) => 'a'.repeat(n));

const encodedText = fc.string({ unit: 'binary', maxLength: 40 }).map(encodeURIComponent);

function idSegments(world: World): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 10, arbitrary: fc.constantFrom(...world.ids) },
    { weight: 2, arbitrary: fc.constantFrom(...world.ids).map((id) => id.toUpperCase()) },
    { weight: 6, arbitrary: fc.constantFrom(...world.freeIds) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '00000000-0000-0000-0000-000000000000',
        'ffffffff-ffff-ffff-ffff-ffffffffffff',
        '{00000000-0000-4000-8000-000000000000}',
        '00000000000040008000000000000000',
      ),
    },
    { weight: 3, arbitrary: encodedText },
    { weight: 3, arbitrary: badEncoding },
    { weight: 1, arbitrary: longSegment },
  );
}

function handleSegments(world: World): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...world.handles).map(encodeURIComponent) },
    { weight: 4, arbitrary: encodedText },
    { weight: 3, arbitrary: badEncoding },
    { weight: 1, arbitrary: longSegment },
  );
}

const searchQuery = fc.oneof(
  encodedText.map((t) => `?query=${t}`),
  fc.constantFrom(
    '',
    '?',
    '?query=',
    '?query',
    '?query=a&query=b',
    '?query=%00',
    '?query=a%00b',
    '?query[]=x',
    '?QUERY=x',
    '?%00=x',
    '?query=%25',
    '?query=_',
    '?query=%5C',
    '?query=%ZZ',
    '?query=%ED%A0%80',
    '?query=%FF',
  ),
  fc.integer({ min: 1, max: 3000 }).map((n) => `?${'query=x&'.repeat(n)}`),
  longSegment.map((s) => `?query=${s}`),
);

function targets(world: World): fc.Arbitrary<string> {
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constantFrom(
        '/bikes/all',
        '/bikes/all/',
        '/BIKES/ALL',
        '/bikes/all?x=1',
        '//bikes/all',
        '/bikes/%61ll',
        'http://localhost/bikes/all',
      ),
    },
    { weight: 30, arbitrary: idSegments(world).map((id) => `/bikes/${id}`) },
    { weight: 8, arbitrary: handleSegments(world).map((h) => `/bikes/by-handle/${h}`) },
    { weight: 8, arbitrary: searchQuery.map((q) => `/bikes/search/by-title${q}`) },
    { weight: 12, arbitrary: fc.constantFrom('/bikes', '/bikes/', '/Bikes/', '/bikes//', '/bikes?x=%00') },
    {
      weight: 4,
      arbitrary: fc.constantFrom(
        '/bikes?sort=-price&limit=3',
        '/bikes?vendor=%00&sort=title',
        '/bikes?cursor=not-a-cursor',
        '/bikes?limit=99999999999999999999',
        '/bikes?minPrice=1e400&currency=EUR',
        '/bikes/changes',
        '/bikes/changes/',
        '/bikes/changes?since=garbage',
        '/bikes/changes?limit=-1',
        '/bikes/%63hanges',
      ),
    },
    { weight: 6, arbitrary: fc.constantFrom('/api/user', '/api/user/', '/api/user?username=x', '/API/USER') },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        '/healthz',
        '/readyz',
        '/openapi.json',
        '/docs',
        '/docs/',
        '/docs/swagger-ui.css',
        '/docs/nope.js',
        '/docs/..%2f..%2fpackage.json',
      ),
    },
    { weight: 4, arbitrary: fc.webPath() },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '*',
        '/',
        '',
        '/bikes/by-handle/',
        '/bikes/search',
        '/bikes/search/by-title/x',
        '/%',
        '/bikes/%ZZ/x',
      ),
    },
  );
}

// ---------------------------------------------------------------- methods, headers

const methods = fc.oneof(
  { weight: 20, arbitrary: fc.constant('GET') },
  { weight: 5, arbitrary: fc.constant('HEAD') },
  { weight: 22, arbitrary: fc.constant('POST') },
  { weight: 15, arbitrary: fc.constant('PUT') },
  { weight: 15, arbitrary: fc.constant('PATCH') },
  { weight: 8, arbitrary: fc.constant('DELETE') },
  { weight: 3, arbitrary: fc.constant('OPTIONS') },
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      'TRACE',
      'CONNECT',
      'PROPFIND',
      'PURGE',
      'QUERY',
      'SEARCH',
      'MKCOL',
      'LOCK',
      'M-SEARCH',
      'FOO',
      'get',
      'PRI',
      'BREW',
    ),
  },
);

function authorizations(world: World): fc.Arbitrary<{ header?: string; auth: Auth }> {
  return fc.oneof(
    { weight: 70, arbitrary: fc.constant({ header: `Bearer ${world.token}`, auth: 'valid' as const }) },
    { weight: 3, arbitrary: fc.constant({ header: `bearer ${world.token}`, auth: 'valid' as const }) },
    { weight: 3, arbitrary: fc.constant({ header: `Basic ${world.token}`, auth: 'valid' as const }) },
    { weight: 8, arbitrary: fc.constant({ auth: 'missing' as const }) },
    {
      weight: 2,
      arbitrary: fc
        .constantFrom('Bearer', 'Bearer ', '', world.token, `Bearer  ${world.token}`)
        .map((header) => ({ header, auth: 'missing' as const })),
    },
    {
      weight: 6,
      arbitrary: fc
        .oneof(
          fc.constantFrom(
            world.foreignToken,
            `${world.token}x`,
            'a.b.c',
            'null',
            '%00',
            world.token.split('.').slice(0, 2).join('.') + '.',
          ),
          fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 60 }).filter((s) => !/\s/.test(s)),
        )
        .map((token) => ({ header: `Bearer ${token}`, auth: 'invalid' as const })),
    },
  );
}

const contentTypes = fc.oneof(
  { weight: 60, arbitrary: fc.constant('application/json') },
  { weight: 6, arbitrary: fc.constant('application/json; charset=utf-8') },
  { weight: 10, arbitrary: fc.constant(undefined) },
  {
    weight: 14,
    arbitrary: fc.constantFrom(
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      '',
      'application/json; charset=utf-16',
      'application/json; charset=latin1',
      'application/json; charset=nope',
      'application/vnd.api+json',
      'APPLICATION/JSON',
      'a/b/c;;=',
      'application/json, text/plain',
      '*/*',
    ),
  },
);

const extraHeaders = fc.subarray(
  [
    ['Accept', 'application/xml'],
    ['X-Request-Id', 'fuzz-1'],
    ['X-Request-Id', 'x'.repeat(300)],
    ['Origin', 'http://evil.example'],
    ['Cookie', 'session=1'],
    ['Connection', 'close'],
    ['Connection', 'keep-alive'],
    ['Upgrade', 'websocket'],
    ['Expect', '100-continue'],
    ['Expect', 'x-odd'],
    ['Content-Encoding', 'gzip'],
    ['Content-Encoding', 'identity'],
    ['Content-Encoding', 'x-unknown'],
    ['X-Odd', '\xff\xfe latin-1 bytes'],
    ['Content-Type', 'text/plain'],
    ['X-Long', 'v'.repeat(50_000)],
    ['X-Forwarded-For', '1.2.3.4, <script>'],
    ['Transfer-Encoding', 'gzip'],
  ] as Array<[string, string]>,
  { minLength: 0, maxLength: 3 },
);

export function describeRequest(request: RawRequest, kind: BodyKind): string {
  const { method, target, headers = [], body, framing } = request;
  const shortTarget = target.length > 120 ? `${target.slice(0, 120)}… (${target.length} chars)` : target;
  const shownHeaders = headers.map(
    ([name, value]) =>
      `${name}: ${name === 'Authorization' ? value.replace(/\S+$/, (t) => `<${t.length} chars>`) : value.slice(0, 60)}`,
  );
  const shownBody = body
    ? ` ${kind} body, ${body.length} bytes ${framing}: ${JSON.stringify(body.subarray(0, 120).toString('utf8'))}`
    : ' no body';
  return `${method} ${shortTarget} [${shownHeaders.join(' | ')}]${shownBody}`;
}

/**
 * A method and target meant for one route (so most requests reach a handler rather than a 405),
 * with bodies of the kind that route reads more often than others; and, a quarter of the time,
 * any method on any target.
 */
function intents(world: World): fc.Arbitrary<{ method: string; target: string; body: Body }> {
  const b = bodyArbitraries(world);
  const any = bodyMix(b);
  const onId = idSegments(world).map((id) => `/bikes/${id}`);
  const intent = (method: fc.Arbitrary<string>, target: fc.Arbitrary<string>, body: fc.Arbitrary<Body>) =>
    fc.record({ method, target, body });
  return fc.oneof(
    {
      weight: 14,
      arbitrary: intent(
        fc.constant('POST'),
        fc.constantFrom('/bikes', '/bikes/', '/Bikes/'),
        bodyMix(b, { 'valid-create': 25, 'mutated-bike': 10 }),
      ),
    },
    {
      weight: 12,
      arbitrary: intent(fc.constant('PUT'), onId, bodyMix(b, { 'valid-replace': 25, 'mutated-bike': 10 })),
    },
    { weight: 12, arbitrary: intent(fc.constant('PATCH'), onId, bodyMix(b, { 'valid-patch': 25, 'mutated-bike': 5 })) },
    { weight: 5, arbitrary: intent(fc.constant('DELETE'), onId, bodyMix(b, { none: 30 })) },
    { weight: 10, arbitrary: intent(fc.constantFrom('GET', 'GET', 'GET', 'HEAD'), onId, bodyMix(b, { none: 40 })) },
    {
      weight: 5,
      arbitrary: intent(
        fc.constantFrom('GET', 'HEAD'),
        handleSegments(world).map((h) => `/bikes/by-handle/${h}`),
        bodyMix(b, { none: 40 }),
      ),
    },
    {
      weight: 5,
      arbitrary: intent(
        fc.constantFrom('GET', 'HEAD'),
        searchQuery.map((q) => `/bikes/search/by-title${q}`),
        bodyMix(b, { none: 40 }),
      ),
    },
    {
      weight: 2,
      arbitrary: intent(
        fc.constantFrom('GET', 'HEAD'),
        fc.constantFrom('/bikes/all', '/bikes/all/', '/BIKES/ALL', '/bikes/all?x=1', 'http://localhost/bikes/all'),
        bodyMix(b, { none: 40 }),
      ),
    },
    {
      weight: 5,
      arbitrary: intent(
        fc.constant('POST'),
        fc.constantFrom('/api/user', '/api/user/', '/API/USER'),
        fc.oneof(
          bodyMix(b, { none: 20, form: 10 }),
          fc.jsonValue({ maxDepth: 2 }).map((username) => jsonBody('random-json', { username })),
        ),
      ),
    },
    { weight: 25, arbitrary: intent(methods, targets(world), any) },
  );
}

export function fuzzCases(world: World): fc.Arbitrary<FuzzCase> {
  return fc
    .record({
      intent: intents(world),
      authorization: authorizations(world),
      contentType: contentTypes,
      extra: fc.oneof(
        { weight: 4, arbitrary: fc.constant([] as Array<[string, string]>) },
        { weight: 1, arbitrary: extraHeaders },
      ),
      chunked: fc.boolean(),
      manyHeaders: fc.oneof(
        { weight: 40, arbitrary: fc.constant(0) },
        { weight: 1, arbitrary: fc.integer({ min: 50, max: 500 }) },
      ),
    })
    .map(({ intent: { method, target, body }, authorization, contentType, extra, chunked, manyHeaders }) => {
      const headers: Array<[string, string]> = [['Host', 'localhost']];
      if (authorization.header !== undefined) headers.push(['Authorization', authorization.header]);
      const type = body.bytes ? (body.json ? contentType : 'application/x-www-form-urlencoded') : contentType;
      if (type !== undefined) headers.push(['Content-Type', type]);
      headers.push(...extra);
      if (extra.some(([name]) => name === 'Upgrade')) headers.push(['Connection', 'Upgrade']);
      for (let i = 0; i < manyHeaders; i++) headers.push([`X-Filler-${i}`, String(i)]);

      const oddReading = extra.some(
        ([name, value]) =>
          (name === 'Content-Encoding' && value !== 'identity') ||
          name === 'Content-Type' ||
          name === 'Transfer-Encoding',
      );
      let sentJson: unknown;
      if (body.bytes && body.json) {
        try {
          sentJson = JSON.parse(body.bytes.toString('utf8'));
        } catch {
          sentJson = undefined;
        }
      }
      const request: RawRequest = {
        method,
        target,
        headers,
        body: body.bytes,
        framing: chunked && body.bytes ? 'chunked' : 'length',
      };
      return {
        request,
        // How fast-check prints a failing case: short, and without the token.
        [fc.toStringMethod]: () => describeRequest(request, body.kind),
        auth: authorization.auth,
        bodyKind: body.kind,
        refused: body.refused ?? false,
        sentJson: body.kind === 'invalid-utf8' ? undefined : sentJson,
        plainJson:
          body.json && (type === 'application/json' || type === 'application/json; charset=utf-8') && !oddReading,
      };
    });
}
