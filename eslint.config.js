// ESLint flat config: `npm run lint` runs ESLint, then Prettier (formatting is Prettier's job,
// so eslint-config-prettier switches off the stylistic rules that would fight it).
const fs = require('node:fs');
const path = require('node:path');
const { defineConfig, globalIgnores } = require('eslint/config');
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');
const prettier = require('eslint-config-prettier');

// The Node.js globals the plain-JavaScript files (configs, bench/) use.
const nodeGlobals = Object.fromEntries(
  [
    'AbortController',
    'Buffer',
    'URL',
    'URLSearchParams',
    '__dirname',
    '__filename',
    'clearImmediate',
    'clearInterval',
    'clearTimeout',
    'console',
    'fetch',
    'performance',
    'process',
    'setImmediate',
    'setInterval',
    'setTimeout',
  ].map((name) => [name, 'readonly']),
);

/**
 * The arrows between the folders of src/ are the table "Folders and what each may import" in
 * docs/architecture.md: each row names a folder of src/ and, in its last column, all that it may
 * import of src/ besides itself. An allow-list: a folder with no row may import nothing of src/
 * outside itself, so a new folder has no arrows until someone draws them in the table.
 */
const ARCHITECTURE = path.join(__dirname, 'docs', 'architecture.md');
const LAYERS_HEADING = '## Folders and what each may import';

/**
 * `{ db: ['generated', 'timeout', 'metrics'], bikes: ['db', 'http/schema'], ... }`: each folder's row, and
 * the folders and modules it names (a module of another folder alone: `src/http/schema.ts`).
 */
function layersOf(markdown) {
  const section = markdown.split(LAYERS_HEADING)[1]?.split('\n## ')[0];
  if (section === undefined) throw new Error(`docs/architecture.md has no heading "${LAYERS_HEADING}"`);
  const layers = {};
  for (const line of section.split('\n')) {
    // | `src/db/` | what it holds | `src/generated/`, `src/timeout.ts`, `src/metrics.ts` |
    const cells = line.split('|').map((cell) => cell.trim());
    const folder = /^`src\/([\w-]+)\/`$/.exec(cells[1] ?? '');
    if (folder) layers[folder[1]] = [...cells[3].matchAll(/`src\/([\w/-]+?)(?:\/|\.ts)`/g)].map((match) => match[1]);
  }
  return layers;
}
const LAYERS = layersOf(fs.readFileSync(ARCHITECTURE, 'utf8'));

/** The files of `folder` (a glob) may import, of src/ outside their folder, only `allowed`. */
function importsOnly(folder, allowed, message) {
  // An import that leaves the folder (`../`) for anything but one of `allowed` (`../db`, `../db/errors`,
  // `../http/schema`).
  const regex = allowed.length === 0 ? '^\\.\\./' : `^\\.\\./(?!(?:${allowed.join('|')})(?:/|$))`;
  return {
    files: [`src/${folder}/**/*.ts`],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ regex, message }] }] },
  };
}
const SEE = '(docs/architecture.md: folders and what each may import)';
const layerRules = [
  // First, for every folder; a folder's own row, later, takes its place.
  importsOnly('*', [], `a folder of src/ with no row in the table may import nothing of src/ ${SEE}`),
  ...Object.entries(LAYERS).map(([folder, allowed]) =>
    importsOnly(
      folder,
      allowed,
      `src/${folder} may import, of src/, only ${allowed.map((name) => `src/${name}`).join(', ') || 'itself'} ${SEE}`,
    ),
  ),
];

module.exports = defineConfig([
  globalIgnores(['dist/', 'dist-dev/', 'coverage/', '.data/', 'src/generated/', 'client/dist/', 'client/build/']),
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    rules: {
      // A leading underscore marks a value left unused on purpose (`const { a: _a, ...rest } = x`).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: nodeGlobals },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  { files: ['**/*.mjs'], languageOptions: { globals: nodeGlobals } },
  ...layerRules,
  prettier,
]);
