import fs from 'node:fs';
import path from 'node:path';

/**
 * A rule is cited by the name of its heading in docs/decisions.md (`docs/decisions.md#path-matching`),
 * never by a number that moves when others are added: each such citation, in the code, the tests
 * and the docs, must name a heading that is there.
 */

const ROOT = path.join(__dirname, '..');
const DECISIONS = path.join(ROOT, 'docs', 'decisions.md');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces made dashes. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replaceAll(' ', '-');

function filesUnder(dir: string, extension: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).flatMap((entry) => {
    const file = path.join(entry.parentPath, entry.name);
    return entry.isFile() && entry.name.endsWith(extension) && !file.includes(`${path.sep}generated${path.sep}`)
      ? [file]
      : [];
  });
}

describe('citations of docs/decisions.md', () => {
  const text = fs.readFileSync(DECISIONS, 'utf8');
  const anchors = new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map(([, heading]) => anchorOf(heading)));
  const citing = [
    ...filesUnder(path.join(ROOT, 'src'), '.ts'),
    ...filesUnder(path.join(ROOT, 'test'), '.ts'),
    ...filesUnder(path.join(ROOT, 'docs'), '.md'),
    path.join(ROOT, 'README.md'),
  ];
  const citations = citing.flatMap((file) => {
    const content = fs.readFileSync(file, 'utf8');
    const pattern = file === DECISIONS ? /\]\(#([\w-]+)\)/g : /decisions\.md#([\w-]+)/g;
    return [...content.matchAll(pattern)].map(([, anchor]) => ({ file: path.relative(ROOT, file), anchor }));
  });

  it('finds citations by name to check (a check on this test)', () => {
    expect(citations.length).toBeGreaterThan(0);
  });

  it('when code, a test or a doc cites docs/decisions.md#<name>, a heading of that name is there', () => {
    expect(citations.filter(({ anchor }) => !anchors.has(anchor))).toEqual([]);
  });
});
