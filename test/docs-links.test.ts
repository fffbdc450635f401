import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { anchorsOfPage } from './support/markdown';

/**
 * Every relative link of every Markdown file leads somewhere: to a file that exists and, with
 * `#anchor`, to a heading of it (GitHub's anchors) or a name a renamed heading kept, so that moving
 * a section breaks a test, not a reader's click. And no page is published with a placeholder left
 * in it.
 */
const ROOT = path.join(__dirname, '..');

const anchorsOf = (file: string) => new Set(anchorsOfPage(fs.readFileSync(path.join(ROOT, file), 'utf8')));

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

/**
 * A figure not measured yet is written as a placeholder: a bare name in capitals and underscores
 * (outside code), to be replaced by the figure. A name in capitals that the code, configuration,
 * scripts or deployment files spell (`DATA_DIR`, `JWT_SECRET`) is a setting or a constant, not a
 * placeholder; one that only the Markdown spells is a placeholder left unfilled.
 */
describe('placeholders in the Markdown files', () => {
  const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
  const existing = tracked.filter((file) => fs.existsSync(path.join(ROOT, file)));
  const pages = existing.filter((file) => file.endsWith('.md'));
  const named = existing
    .filter((file) => !file.endsWith('.md') && !file.startsWith('test/') && !/\.(png|ico|woff2?)$/.test(file))
    .map((file) => fs.readFileSync(path.join(ROOT, file), 'utf8'))
    .join('\n');
  const CAPITALS = /\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g;
  /** A page's prose: its code blocks and code spans (which may span lines) left out. */
  const proseOf = (text: string) => text.replace(/```[\s\S]*?```/g, '').replace(/`[^`]*`/g, '');

  it('finds the names in capitals the pages use (this test reads the files it should)', () => {
    expect(
      pages.flatMap((page) => proseOf(fs.readFileSync(path.join(ROOT, page), 'utf8')).match(CAPITALS) ?? []),
    ).toContain('DATA_DIR');
  });

  it('are all filled: every name in capitals in prose is one the project spells outside its docs', () => {
    const unfilled = pages.flatMap((page) =>
      (proseOf(fs.readFileSync(path.join(ROOT, page), 'utf8')).match(CAPITALS) ?? [])
        .filter((name) => !new RegExp(`\\b${name}\\b`).test(named))
        .map((name) => `${page}: ${name}`),
    );
    expect(unfilled).toEqual([]);
  });
});

/** A small README, deep guides: the README says what it is, how to start and where to read more. */
describe('the README', () => {
  it('stays at most 260 lines, the rest in docs/', () => {
    expect(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').trimEnd().split('\n').length).toBeLessThanOrEqual(260);
  });
});
