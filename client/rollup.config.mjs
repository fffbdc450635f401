// The client's package, in two files: dist/index.js and dist/index.d.ts, each whole, openapi-fetch
// included. `npm install <folder>` links a folder outside the project without installing its
// dependencies, so the package has none: what it runs and its types resolve from where it lies.
// Input: what `tsc -p client/tsconfig.json` left in client/build/. `npm run client:build` runs both;
// test/client/package.test.ts builds into another folder (CLIENT_DIST) to compare with dist/.
import fs from 'node:fs';
import { nodeResolve } from '@rollup/plugin-node-resolve';
import { dts } from 'rollup-plugin-dts';

const here = (file) => new URL(file, import.meta.url).pathname;
const dist = process.env.CLIENT_DIST ?? here('dist');
const license = fs.readFileSync(here('../node_modules/openapi-fetch/LICENSE'), 'utf8').trim();
const banner = `/*!\n * bike-catalog-client. Includes openapi-fetch (https://openapi-ts.dev), under its license:\n *\n${license
  .split('\n')
  .map((line) => ` * ${line}`.trimEnd())
  .join('\n')}\n */`;

export default [
  {
    input: here('build/index.js'),
    output: { file: `${dist}/index.js`, format: 'es', banner },
    plugins: [nodeResolve()],
  },
  {
    input: here('build/index.d.ts'),
    output: { file: `${dist}/index.d.ts`, format: 'es' },
    plugins: [dts({ respectExternal: true })],
  },
];
