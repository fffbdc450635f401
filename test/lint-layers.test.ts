import { spawnSync } from 'node:child_process';
import path from 'node:path';

/**
 * The arrows between the folders of src/ (docs/architecture.md) are the linter's to enforce:
 * an import against them fails `npm run lint`.
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
    ['src/bikes/example.ts', "import { routes } from '../http/route';"],
    ['src/http/example.ts', "import { startEmbeddedPostgres } from '../postgres/embedded-postgres';"],
  ])('%s may not %s', async (file, line) => {
    expect(await ruleIdsFor(file, `${line}\nexport const used = [${line.split(' ')[2]}];\n`)).toContain(
      'no-restricted-imports',
    );
  });

  it('an import along the arrows passes', async () => {
    const code =
      "import { isDatabaseUnavailable } from '../db/errors';\nexport const used = [isDatabaseUnavailable];\n";
    expect(await ruleIdsFor('src/http/example.ts', code)).not.toContain('no-restricted-imports');
  });
});
