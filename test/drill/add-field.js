#!/usr/bin/env node
/**
 * npm run drill:field: the drill of docs/development.md#adding-a-field-to-the-bike, run. In a
 * scratch clone of this checkout's HEAD it takes the guide's steps for its two fields, `frameSize`
 * (required) and `weightKg` (optional, a number or null), as the guide writes them, and runs the
 * checks: all green. Then, for each row of the guide's table of what catches a step left out, it
 * takes every step but that one and runs what the row names: each must fail. It prints one line
 * a row, and exits 1 if the full change is not green or an omission goes uncaught.
 *
 *   npm run drill:field                     the whole drill (long: a jest run per row)
 *   npm run drill:field -- --only=map       the green run, then only the rows named (comma-separated)
 *   npm run drill:field -- --keep           keep the scratch clone (its path is printed)
 *
 * It needs what the tests need (a PostgreSQL, as `npm test` finds or starts one), and dist/ is
 * built in the scratch clone, not here. Uncommitted changes here are not in the clone.
 */
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');

/** The guide's steps (docs/development.md#adding-a-field-to-the-bike), each an edit of the clone at `dir`. */
const STEPS = {
  definition(dir) {
    edit(dir, 'src/bikes/bike.ts', (text) =>
      once(
        text,
        /(\n {2}priceRange: object\(\{ minPrice: money, maxPrice: money \}, 'PriceRange'\),\n)/,
        "$1  frameSize: text('54 cm'),\n  weightKg: finiteNumber(9.5).nullable().optional(),\n",
      ),
    );
  },
  nullable(dir) {
    // Undone alone, `.nullable()` (the column stays nullable): the compiler holds the column to the field.
    edit(dir, 'src/bikes/bike.ts', (text) => once(text, /(\n {2}weightKg: finiteNumber\(9\.5\))\.nullable\(\)/, '$1'));
  },
  map(dir) {
    edit(dir, 'src/bikes/fields.ts', (text) =>
      once(
        text,
        /(\n {2}'priceRange\.maxPrice\.currencyCode': \{[^\n]*\},\n)/,
        "$1  frameSize: { column: 'frame_size', name: 'frameSize' },\n  weightKg: { column: 'weight_kg', name: 'weightKg' },\n",
      ),
    );
  },
  table(dir, { last = true } = {}) {
    edit(dir, 'prisma/schema.prisma', (text) => {
      const bike = [
        '  frameSize            String   @default("") @map("frame_size")',
        '  weightKg             Float?   @map("weight_kg")',
      ];
      const change = [
        '  frameSize            String?  @map("frame_size")',
        '  weightKg             Float?   @map("weight_kg")',
      ];
      return addToModel(addToModel(text, 'Bike', bike, last), 'BikeChange', change, last);
    });
  },
  migration(dir, { searchPath = true, fill = true, triggers = true, touch = true, defaults = true } = {}) {
    const latest = latestDefinition(dir);
    const functions = ['capture_bike_inserts', 'capture_bike_updates']
      .map((name) => functionOf(latest, name))
      .map((sql) =>
        sql
          .replaceAll('n."max_price_currency_code",', 'n."max_price_currency_code", n."frame_size", n."weight_kg",')
          .replace(/(?<!n\.)"max_price_currency_code",/g, '"max_price_currency_code", "frame_size", "weight_kg",'),
      );
    const sql = [
      `ALTER TABLE "bikes" ADD COLUMN "frame_size" TEXT NOT NULL${defaults ? " DEFAULT ''" : ''};`,
      'ALTER TABLE "bikes" ADD COLUMN "weight_kg" DOUBLE PRECISION;',
      'ALTER TABLE "bike_changes" ADD COLUMN "frame_size" TEXT;',
      'ALTER TABLE "bike_changes" ADD COLUMN "weight_kg" DOUBLE PRECISION;',
      fill ? `UPDATE "bike_changes" SET "frame_size" = '' WHERE "kind" <> 'delete';` : '',
      searchPath ? "SELECT set_config('search_path', current_setting('search_path') || ', pg_temp', true);" : '',
      ...(triggers ? functions : []),
      touch ? 'UPDATE "bikes" SET "frame_size" = "frame_size", "weight_kg" = "weight_kg";' : '',
    ];
    const name = `${migrationStamp(dir)}_bike_frame_size_and_weight`;
    fs.mkdirSync(path.join(dir, 'prisma', 'migrations', name));
    fs.writeFileSync(
      path.join(dir, 'prisma', 'migrations', name, 'migration.sql'),
      `${sql.filter(Boolean).join('\n\n')}\n`,
    );
  },
  client(dir) {
    run(dir, 'npm', ['run', '--silent', 'client:build']);
  },
  docs(dir) {
    edit(dir, 'README.md', (text) =>
      text
        .replaceAll('"priceRange": {', '"frameSize": "54 cm", "weightKg": null, "priceRange": {')
        .replaceAll('priceRange: { minPrice: price', "frameSize: '54 cm', priceRange: { minPrice: price"),
    );
    edit(dir, 'docs/reporting.md', (text) =>
      text.replace(/^(\| `min_price_currency_code`, `max_price_currency_code` *\|[^\n]*\n)/gm, (row) => {
        const cells = row.split('|');
        const widths = cells.slice(1, -1).map((cell) => cell.length);
        const line = (...values) => `|${values.map((v, i) => ` ${v}`.padEnd(widths[i])).join('|')}|\n`;
        return `${row}${line('`frame_size`', 'text', '`frameSize`')}${line('`weight_kg`', 'double precision', '`weightKg`')}`;
      }),
    );
  },
};

/** The steps in the guide's order, each by the second word of its bold title there (**The definition**, **One migration**). */
const GUIDE_STEPS = ['definition', 'map', 'table', 'migration', 'client', 'docs'];

const API_TESTS = ['test/api', 'test/feed', 'test/ops/openapi.test.ts', 'test/ops/who-changed.test.ts'];

/**
 * The guide's table, by its rows' first cell: a step (or a part of one) left out, all others
 * taken, and the checks that must fail then, each named in the row's second cell.
 */
const OMISSIONS = [
  { row: 'the map', without: { map: false }, checks: ['typecheck'] },
  { row: 'the table', without: { table: false }, checks: ['typecheck'] },
  {
    row: '`.nullable()` (or `?` on the column)',
    without: { nullable: true },
    checks: ['typecheck', 'test/schema.test.ts'],
  },
  { row: 'the column last in the models', without: { table: { last: false } }, checks: ['test/schema.test.ts'] },
  { row: 'the migration, or a column of it', without: { migration: false }, checks: ['test/schema.test.ts'] },
  {
    row: "the log's column, its fill or the triggers",
    without: { migration: { fill: false } },
    checks: ['test/feed/change-capture.test.ts'],
  },
  {
    row: "the log's column, its fill or the triggers",
    without: { migration: { triggers: false } },
    checks: ['test/feed/change-capture.test.ts'],
  },
  {
    row: 'the `search_path` line before the functions',
    without: { migration: { searchPath: false } },
    checks: ['test/ops/service-role.test.ts'],
  },
  {
    row: 'the UPDATE of every bike',
    without: { migration: { touch: false } },
    checks: ['test/feed/change-capture.test.ts'],
  },
  { row: 'the default', without: { migration: { defaults: false } }, checks: ['test/feed/change-capture.test.ts'] },
  { row: "the client's types", without: { client: false }, checks: ['test/client/package.test.ts'] },
  {
    row: "the README's bodies, `docs/reporting.md`",
    without: { docs: false },
    checks: ['test/readme.test.ts', 'test/ops/history-reports.test.ts'],
  },
];

// ---------------------------------------------------------------- edits

function edit(dir, file, change) {
  const target = path.join(dir, file);
  const before = fs.readFileSync(target, 'utf8');
  const after = change(before);
  if (after === before) throw new Error(`the drill found nothing to change in ${file}: has the guide moved on?`);
  fs.writeFileSync(target, after);
}

/** `text` with the one match of `pattern` replaced; an error if it does not match exactly once. */
function once(text, pattern, replacement) {
  const matches = text.match(new RegExp(pattern.source, `${pattern.flags}g`)) ?? [];
  if (matches.length !== 1) throw new Error(`the drill expected one ${pattern} and found ${matches.length}`);
  return text.replace(pattern, replacement);
}

/** `lines` added to `model`'s columns: last (before its attributes, `@@`, and their comments), or first. */
function addToModel(schema, model, lines, last) {
  const start = schema.indexOf(`\nmodel ${model} {\n`);
  if (start < 0) throw new Error(`no model ${model} in prisma/schema.prisma`);
  const bodyStart = schema.indexOf('\n', start + 1) + 1;
  const end = schema.indexOf('\n}\n', bodyStart) + 1;
  const body = schema.slice(bodyStart, end).split('\n');
  let at = last ? body.findIndex((line) => /^\s*@@/.test(line)) : 0;
  if (at < 0) at = body.length - 1;
  if (last) while (at > 0 && /^\s*(\/\/\/.*)?$/.test(body[at - 1])) at--;
  body.splice(at, 0, ...lines);
  return schema.slice(0, bodyStart) + body.join('\n') + schema.slice(end);
}

/** The migration that last defines capture_bike_updates, as the guide's grep finds it. */
function latestDefinition(dir) {
  const migrations = path.join(dir, 'prisma', 'migrations');
  const defining = fs
    .readdirSync(migrations)
    .filter((name) => fs.existsSync(path.join(migrations, name, 'migration.sql')))
    .sort()
    .filter((name) =>
      /CREATE (OR REPLACE )?FUNCTION "capture_bike_updates"/.test(
        fs.readFileSync(path.join(migrations, name, 'migration.sql'), 'utf8'),
      ),
    );
  return fs.readFileSync(path.join(migrations, defining.at(-1), 'migration.sql'), 'utf8');
}

/** A function's whole definition in a migration, from CREATE to its closing `$$;`. */
function functionOf(sql, name) {
  const match = new RegExp(`CREATE (OR REPLACE )?FUNCTION "${name}"\\(\\)[\\s\\S]*?\\n\\$\\$;`).exec(sql);
  if (!match) throw new Error(`no definition of ${name}`);
  return match[0].replace(/^CREATE FUNCTION/, 'CREATE OR REPLACE FUNCTION');
}

/** A timestamp after every migration's. */
function migrationStamp(dir) {
  const last = fs
    .readdirSync(path.join(dir, 'prisma', 'migrations'))
    .filter((n) => /^\d{14}_/.test(n))
    .sort()
    .at(-1);
  return String(BigInt(last.slice(0, 14)) + 1n);
}

// ---------------------------------------------------------------- running

function run(dir, command, args) {
  execFileSync(command, args, { cwd: dir, stdio: 'pipe', env: { ...process.env, CI: 'true' }, maxBuffer: 1 << 28 });
}

/** Whether `check` passes in `dir`: `typecheck`, or a jest run of test files (dist/ built first). */
function passes(dir, check) {
  const [command, args] =
    check === 'typecheck'
      ? ['npm', ['run', '--silent', 'typecheck']]
      : ['sh', ['-c', `npm run --silent build && npx jest ${check}`]];
  const result = spawnSync(command, args, {
    cwd: dir,
    stdio: 'pipe',
    env: { ...process.env, CI: 'true' },
    maxBuffer: 1 << 28,
  });
  const output = `${result.stdout}${result.stderr}`;
  return { ok: result.status === 0, tail: output.trim().split('\n').slice(-15).join('\n') };
}

/**
 * A fresh clone of HEAD with every step taken but as `without` says (a step false: left out;
 * options: taken so). `failed`: the step whose own command failed (`npm run client:build`
 * compiles the service first), which catches the omission as surely as a check: the steps after
 * it are taken all the same.
 */
function scratch(base, without = {}) {
  const dir = fs.mkdtempSync(path.join(base, 'clone-'));
  run(ROOT, 'git', ['clone', '--quiet', '--no-hardlinks', ROOT, dir]);
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  let failed;
  for (const step of GUIDE_STEPS) {
    const how = without[step];
    if (how === false) continue;
    // The Kysely and Prisma types, as `npm run postinstall` writes them, before the client is built.
    if (step === 'client') run(dir, 'npm', ['run', '--silent', 'postinstall']);
    try {
      STEPS[step](dir, typeof how === 'object' ? how : undefined);
    } catch (err) {
      if (!err.status) throw err;
      failed = step;
    }
    if (step === 'definition' && without.nullable) STEPS.nullable(dir);
  }
  if (without.client === false) run(dir, 'npm', ['run', '--silent', 'postinstall']);
  return { dir, failed };
}

function main() {
  const args = process.argv.slice(2);
  const keep = args.includes('--keep');
  const only = args
    .find((a) => a.startsWith('--only='))
    ?.slice('--only='.length)
    .split(',');
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'bike-catalog-drill-'));
  let failed = false;
  try {
    const { dir: full, failed: failedStep } = scratch(base);
    if (failedStep) {
      console.log(`RED    every step taken: the step ${failedStep} failed`);
      failed = true;
      return;
    }
    const green = [
      'typecheck',
      [
        ...API_TESTS,
        'test/ops/service-role.test.ts',
        'test/schema.test.ts',
        'test/client/package.test.ts',
        'test/readme.test.ts',
        'test/ops/history-reports.test.ts',
      ].join(' '),
    ];
    for (const check of green) {
      const { ok, tail } = passes(full, check);
      console.log(`${ok ? 'green' : 'RED  '}  every step taken: ${check}`);
      if (!ok) {
        console.log(tail);
        failed = true;
      }
    }
    if (failed) return;
    for (const { row, without, checks } of OMISSIONS) {
      if (only && !only.some((name) => row.includes(name))) continue;
      const { dir, failed: failedStep } = scratch(base, without);
      const caught = failedStep ? [`the step ${failedStep}`] : checks.filter((check) => !passes(dir, check).ok);
      console.log(
        `${caught.length > 0 ? 'caught' : 'MISSED'}  left out: ${row}  (${caught.length > 0 ? caught.join(', ') : checks.join(', ')})`,
      );
      if (caught.length === 0) failed = true;
      if (!keep) fs.rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    if (keep) console.log(`scratch clones kept in ${base}`);
    else fs.rmSync(base, { recursive: true, force: true });
    if (failed) process.exitCode = 1;
  }
}

if (require.main === module) main();

module.exports = { GUIDE_STEPS, OMISSIONS, STEPS };
