// ESLint flat config: `npm run lint` runs ESLint, then Prettier (formatting is Prettier's job,
// so eslint-config-prettier switches off the stylistic rules that would fight it).
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
 * The arrows between the folders of src/ (docs/architecture.md): each folder lists the folders
 * and top-level modules of ours it must not import, so a wrong arrow fails `npm run lint`.
 */
const LAYERS = {
  postgres: ['http', 'bikes', 'db', 'auth', 'cli', 'app', 'server', 'config', 'metrics'],
  db: ['http', 'bikes', 'feed', 'postgres', 'auth', 'cli', 'app', 'server', 'config', 'logger'],
  bikes: ['http', 'feed', 'postgres', 'auth', 'cli', 'app', 'server', 'config', 'logger', 'metrics'],
  feed: ['http', 'postgres', 'auth', 'cli', 'app', 'server', 'config', 'logger', 'metrics'],
  auth: ['http', 'bikes', 'db', 'postgres', 'cli', 'app', 'server', 'config', 'logger', 'metrics'],
  http: ['postgres', 'cli', 'app', 'server', 'config'],
  cli: ['http', 'app', 'server'],
};
const layerRules = Object.entries(LAYERS).map(([folder, forbidden]) => ({
  files: [`src/${folder}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: forbidden.map((name) => ({
          group: [`../${name}`, `../${name}/**`, `**/src/${name}`, `**/src/${name}/**`],
          message: `src/${folder} may not import src/${name} (docs/architecture.md: folders and what each may import).`,
        })),
      },
    ],
  },
}));

module.exports = defineConfig([
  globalIgnores(['dist/', 'dist-dev/', 'coverage/', '.data/', 'src/generated/']),
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
  ...layerRules,
  prettier,
]);
