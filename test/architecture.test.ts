import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * docs/architecture.md names files and what they declare; it must stay true of the code. Every
 * backticked path it gives must exist, and every backticked name it places in a file
 * ("`check` in `src/http/schema.ts`", "`src/db/pool.ts` (`writeOn`, `ROLE_SETTINGS`)") must be
 * declared there.
 */
const ROOT = path.join(__dirname, '..');
const markdown = fs.readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8');

/** Everything between backticks, in the order written. */
const backticked = [...markdown.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]);

/** A path from the project's root: a folder of ours and what follows (`src/http/route.ts`, `test/api/`), or a file with an extension. */
const PATH =
  /^(?:(?:src|test|prisma|bench|deploy|docs|client)\/[\w.*/-]*|[\w.-]+\.(?:ts|js|json|yml|sql|prisma|sh|md))$/;

/** Whether `name` (a path, `*` standing for any part of one name) names a file or folder. */
function exists(name: string): boolean {
  if (!name.includes('*')) return fs.existsSync(path.join(ROOT, name));
  const folder = path.dirname(name);
  const pattern = new RegExp(`^${path.basename(name).replace(/\./g, '\\.').replace(/\*/g, '[^/]*')}$`);
  return fs.existsSync(path.join(ROOT, folder)) && fs.readdirSync(path.join(ROOT, folder)).some((f) => pattern.test(f));
}

/** A list of backticked names: "`a`", "`a`, `b`", "`a` and `b`", "`a`, `b` and `c`". */
const NAMES = '`[\\w.]+`(?:(?:, | and )`[\\w.]+`)*';
const namesIn = (list: string) => [...list.matchAll(/`([\w.]+)`/g)].map((match) => match[1]);

/** The names the page places in a file: "NAMES in `file`" and "`file` (NAMES)". */
const placed = [
  ...[...markdown.matchAll(new RegExp(`(${NAMES}) in \`([^\`]+)\``, 'g'))].map((match) => ({
    file: match[2],
    names: namesIn(match[1]),
  })),
  ...[...markdown.matchAll(new RegExp(`\`([^\`]+)\` \\((${NAMES})\\)`, 'g'))].map((match) => ({
    file: match[1],
    names: namesIn(match[2]),
  })),
].flatMap(({ file, names }) => names.map((name) => ({ file, name })));

/**
 * Whether `text` declares `name`: a function, class, variable, type or enum of that name, an
 * export of it, or a key or method of an object (`replaceBike: {`, `async replace(`). A dotted
 * name (`API_ROUTES.replaceBike`) is each of its parts.
 */
function declares(text: string, name: string): boolean {
  return name
    .split('.')
    .every((part) =>
      [
        new RegExp(`\\b(?:function\\*?|const|let|var|class|interface|type|enum)\\s+${part}\\b`),
        new RegExp(`\\bexport\\s*(?:type\\s*)?\\{[^}]*\\b${part}\\b[^}]*\\}`),
        new RegExp(`^\\s*(?:async\\s+)?${part}\\s*[:(]`, 'm'),
      ].some((declaration) => declaration.test(text)),
    );
}

describe('docs/architecture.md against the code', () => {
  const paths = backticked.filter((name) => PATH.test(name));

  it('finds paths and names placed in files (this test reads the page as it is written)', () => {
    expect(paths.length).toBeGreaterThan(20);
    expect(placed.length).toBeGreaterThan(20);
  });

  it('names only paths that exist', () => {
    expect(paths.filter((name) => !exists(name))).toEqual([]);
  });

  it('places each name in a file that declares it', () => {
    const wrong = placed.filter(
      ({ file, name }) =>
        !PATH.test(file) || !exists(file) || !declares(fs.readFileSync(path.join(ROOT, file), 'utf8'), name),
    );
    expect(wrong).toEqual([]);
  });
});

/**
 * No circle of imports in src/ (docs/architecture.md#folders-and-what-each-may-import): a file
 * that reaches itself through its imports, type imports included, is two things that belong
 * apart or together. Read with TypeScript's own parser, each relative import resolved as the
 * compiler resolves it here (`./x` is `x.ts` or `x/index.ts`).
 */
describe('the imports of src/', () => {
  const SRC = path.join(ROOT, 'src');
  const files = (function walk(folder: string): string[] {
    return fs.readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
      const file = path.join(folder, entry.name);
      if (entry.isDirectory()) return entry.name === 'generated' ? [] : walk(file);
      return file.endsWith('.ts') && !file.endsWith('.d.ts') ? [file] : [];
    });
  })(SRC);
  const importsOf = (file: string): string[] =>
    ts
      .preProcessFile(fs.readFileSync(file, 'utf8'), true, false)
      .importedFiles.map(({ fileName }) => fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => path.resolve(path.dirname(file), name))
      .flatMap(
        (target) => [target, `${target}.ts`, path.join(target, 'index.ts')].find((f) => files.includes(f)) ?? [],
      );
  const graph = new Map(files.map((file) => [file, importsOf(file)]));

  /** Every circle, each once, as the files on it from the one first in the list of files. */
  function circles(): string[][] {
    const found: string[][] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (file: string) => {
      state.set(file, 'open');
      stack.push(file);
      for (const next of graph.get(file) ?? []) {
        if (state.get(next) === 'open') found.push(stack.slice(stack.indexOf(next)).map((f) => path.relative(ROOT, f)));
        else if (!state.has(next)) visit(next);
      }
      stack.pop();
      state.set(file, 'done');
    };
    for (const file of files) if (!state.has(file)) visit(file);
    return found;
  }

  it('reads the imports (this test finds the files and their imports)', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(graph.get(path.join(SRC, 'http', 'route.ts'))).toContain(path.join(SRC, 'http', 'endpoint.ts'));
  });

  it('has no circle', () => {
    expect(circles()).toEqual([]);
  });
});
