import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { anchorOf } from './support/markdown';

/**
 * Every relative link of every Markdown file leads somewhere: to a file that exists and, with
 * `#anchor`, to a heading of it (GitHub's anchors), so that moving a section breaks a test, not a
 * reader's click.
 */
const ROOT = path.join(__dirname, '..');

const anchorsOf = (file: string) =>
  new Set(
    fs
      .readFileSync(path.join(ROOT, file), 'utf8')
      .split('\n')
      .flatMap((line) => /^#{1,6} (.+)$/.exec(line)?.[1] ?? [])
      .map(anchorOf),
  );

describe('links between the Markdown files', () => {
  const pages = execFileSync('git', ['ls-files', '*.md'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
  const links = pages.flatMap((page) =>
    [...fs.readFileSync(path.join(ROOT, page), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)]
      .map(([, target]) => target)
      .filter((target) => !/^[a-z]+:/.test(target))
      .map((target) => {
        const [file, anchor] = target.split('#');
        return { page, target, file: file ? path.join(path.dirname(page), file) : page, anchor };
      }),
  );

  it('finds some (this test reads the files it should)', () => {
    expect(links.length).toBeGreaterThan(30);
  });

  it('leads to a file that exists, and a heading of it', () => {
    const broken = links.filter(
      ({ file, anchor }) =>
        !fs.existsSync(path.join(ROOT, file)) || (anchor !== undefined && !anchorsOf(file).has(anchor)),
    );
    expect(broken.map(({ page, target }) => `${page}: ${target}`)).toEqual([]);
  });
});
