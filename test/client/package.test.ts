import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestService } from '../support/service';
import { CLIENT, newProject, npm } from './project';

/**
 * The client's package (client/): its generated types are those of the document the service
 * serves, its committed bundle is the build of its source, and a new user installs it from the
 * folder or its tarball, in a project of their own, and runs it from ES modules and CommonJS, with
 * its types.
 */

const ROOT = path.join(__dirname, '..', '..');
const REBUILD = 'run `npm run client:build` and commit client/';

/** Runs a tool of the project's node_modules with this Node.js. */
function tool(bin: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): string {
  return execFileSync(process.execPath, [path.join(ROOT, 'node_modules', '.bin', bin), ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, ...options.env },
    encoding: 'utf8',
  });
}

describe('the client package', () => {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'bike-catalog-client-'));
  afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

  it('has the types of the OpenAPI document the service serves (client/src/schema.ts, from openapi-typescript)', async () => {
    const svc = await startTestService();
    try {
      fs.writeFileSync(path.join(scratch, 'openapi.json'), await (await fetch(`${svc.baseUrl}/openapi.json`)).text());
    } finally {
      await svc.stop();
    }
    tool('openapi-typescript', [path.join(scratch, 'openapi.json'), '-o', path.join(scratch, 'schema.ts')]);
    const generated = fs.readFileSync(path.join(scratch, 'schema.ts'), 'utf8');
    const committed = fs.readFileSync(path.join(CLIENT, 'src', 'schema.ts'), 'utf8');
    if (generated !== committed)
      throw new Error(`client/src/schema.ts is older than the service's document: ${REBUILD}`);
  });

  it('has in dist/ the build of its source, and depends on nothing', () => {
    const built = path.join(scratch, 'dist');
    tool('tsc', ['-p', path.join(CLIENT, 'tsconfig.json')]);
    tool('rollup', ['--silent', '-c', path.join(CLIENT, 'rollup.config.mjs')], { env: { CLIENT_DIST: built } });
    for (const file of ['index.js', 'index.d.ts']) {
      const same =
        fs.readFileSync(path.join(built, file), 'utf8') === fs.readFileSync(path.join(CLIENT, 'dist', file), 'utf8');
      if (!same) throw new Error(`client/dist/${file} is not the build of client/src: ${REBUILD}`);
    }
    const manifest = JSON.parse(fs.readFileSync(path.join(CLIENT, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest).not.toHaveProperty('dependencies');
    expect(manifest).not.toHaveProperty('scripts');
  });

  describe('installed into an empty project (0700, as root too)', () => {
    /** The client runs there as an ES module and from CommonJS, and TypeScript finds its types. */
    const expectUsable = (dir: string) => {
      const script =
        'const { createCatalogClient, ConflictError } = CLIENT; console.log(typeof createCatalogClient, typeof ConflictError);';
      fs.writeFileSync(path.join(dir, 'esm.mjs'), script.replace('CLIENT', "await import('bike-catalog-client')"));
      fs.writeFileSync(path.join(dir, 'cjs.cjs'), script.replace('CLIENT', "require('bike-catalog-client')"));
      for (const file of ['esm.mjs', 'cjs.cjs']) {
        expect(execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8' })).toBe('function function\n');
      }
      fs.writeFileSync(
        path.join(dir, 'typed.ts'),
        [
          "import { createCatalogClient, type Bike } from 'bike-catalog-client';",
          "const catalog = createCatalogClient({ baseUrl: 'http://localhost:3000' });",
          'export const stock = (bike: Bike) => catalog.update(bike, { totalInventory: bike.totalInventory - 1 });',
          "export const wrong = () => catalog.update('id', { totalInventory: 'none' });",
          // A price range is in a currency: without one, the compiler says so.
          'export const unpriced = () => catalog.pages({ minPrice: 100 });',
          "export const priced = () => catalog.pages({ currency: 'EUR', minPrice: 100, maxPrice: 900 });",
          // A filter that may be repeated takes one value or several.
          "export const brands = () => catalog.facets({ vendor: ['Trek', 'Giant'], productType: 'Road' });",
          "export type { BlockedError, FollowStatus, Money, PriceRange } from 'bike-catalog-client';",
        ].join('\n'),
      );
      const options = [
        '--noEmit',
        '--strict',
        '--module',
        'nodenext',
        '--target',
        'es2022',
        '--lib',
        'es2022,dom',
        'typed.ts',
      ];
      // Type-checked: the wrong lines, and they alone, are errors.
      const errors = (() => {
        try {
          tool('tsc', options, { cwd: dir });
          return '';
        } catch (err) {
          return String((err as { stdout: string }).stdout);
        }
      })();
      // Each error's first line (the lines after it say why).
      expect(errors.split('\n').filter((line) => line.startsWith('typed.ts('))).toEqual([
        expect.stringMatching(/^typed\.ts\(4,.*TS2322/),
        expect.stringMatching(/^typed\.ts\(5,.*TS2345.*minPrice/),
      ]);
    };

    it('from the folder of a clone elsewhere: `npm install <clone>/client` (npm links it)', () => {
      const dir = newProject(scratch, 'linked');
      npm(['install', CLIENT], dir);
      expect(fs.lstatSync(path.join(dir, 'node_modules', 'bike-catalog-client')).isSymbolicLink()).toBe(true);
      expectUsable(dir);
    });

    it('from its tarball (`npm pack`), which holds the bundle and nothing else to build', () => {
      const dir = newProject(scratch, 'packed');
      const tarball = npm(['pack', '--silent', '--pack-destination', dir, CLIENT], dir).trim();
      const files = execFileSync('tar', ['-tzf', path.join(dir, tarball)], { encoding: 'utf8' })
        .trim()
        .split('\n');
      expect(files.sort()).toEqual([
        'package/README.md',
        'package/dist/index.d.ts',
        'package/dist/index.js',
        'package/package.json',
      ]);
      npm(['install', `./${tarball}`], dir);
      expectUsable(dir);
    });
  });
});
