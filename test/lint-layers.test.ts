import { spawnSync } from 'node:child_process';
import path from 'node:path';

/**
 * The arrows between the folders of src/ are the table in docs/architecture.md ("Folders and what
 * each may import"), which eslint.config.js reads: an allow-list, so an import the table does not
 * draw, or any import of src/ from a folder the table does not list, fails `npm run lint`.
 */
const ROOT = path.join(__dirname, '..');

/** The rules the project's ESLint (as `npm run lint` runs it) finds broken in `code`, as if it were `file`. */
async function ruleIdsFor(file: string, code: string): Promise<(string | null)[]> {
  const eslint = path.join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js');
  const run = spawnSync(process.execPath, [eslint, '--format', 'json', '--stdin', '--stdin-filename', file], {
    cwd: ROOT,
    input: code,
    encoding: 'utf8',
  });
  const [result] = JSON.parse(run.stdout) as { messages: { ruleId: string | null }[] }[];
  return result.messages.map((message) => message.ruleId);
}

describe('the layering of src/', () => {
  it.each([
    ['src/postgres/example.ts', "import { HttpError } from '../http/errors';"],
    ['src/postgres/example.ts', "import { createBikeRepository } from '../bikes/repository';"],
    ['src/db/example.ts', "import { HttpError } from '../http/errors';"],
    ['src/db/example.ts', "import { createLogger } from '../logger';"],
    ['src/bikes/example.ts', "import { routerOf } from '../http/route';"],
    ['src/feed/example.ts', "import { registry } from '../metrics';"],
    ['src/http/example.ts', "import { startEmbeddedPostgres } from '../postgres/embedded-postgres';"],
    // The kernel knows no bike: neither the catalog's data, nor the feed, nor the API's operations.
    ['src/http/example.ts', "import { createBikeRepository } from '../bikes/repository';"],
    ['src/http/example.ts', "import { changesAfter } from '../feed/changes';"],
    ['src/http/example.ts', "import { API_ROUTES } from '../api';"],
    // Of the kernel, bikes/ may use only the modules its row names.
    ['src/bikes/example.ts', "import { readBody } from '../http/body';"],
    ['src/bikes/example.ts', "import { schemaOf } from '../http/schema-extra';"],
    // A folder the table does not list has no arrows at all.
    ['src/example/example.ts', "import { isDatabaseUnavailable } from '../db/errors';"],
    ['src/example/example.ts', "import { registry } from '../metrics';"],
  ])('%s may not %s', async (file, line) => {
    expect(await ruleIdsFor(file, `${line}\nexport const used = [${line.split(' ')[2]}];\n`)).toContain(
      'no-restricted-imports',
    );
  });

  it.each([
    ['src/http/example.ts', "import { isDatabaseUnavailable } from '../db/errors';"],
    ['src/feed/example.ts', "import { listVersion } from '../bikes/catalog-version';"],
    ['src/bikes/example.ts', "import { WRONG_TYPE } from '../http/schema';"],
    ['src/api/example.ts', "import { routerOf } from '../http/route';"],
    ['src/api/example.ts', "import { createBikeRepository } from '../bikes/repository';"],
    ['src/db/example.ts', "import { registry } from '../metrics';"],
    // Within its own folder, any folder may import, listed or not.
    ['src/db/example.ts', "import { writeOn } from './pool';"],
    ['src/example/example.ts', "import { helper } from './helper';"],
  ])('%s may %s', async (file, line) => {
    expect(await ruleIdsFor(file, `${line}\nexport const used = [${line.split(' ')[2]}];\n`)).not.toContain(
      'no-restricted-imports',
    );
  });
});
