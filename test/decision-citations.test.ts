import fs from 'node:fs';
import path from 'node:path';

/**
 * Code, tests and docs cite a decision by its heading's anchor (`docs/decisions.md#<anchor>`),
 * which does not move when other decisions are added: each citation must name a heading.
 */

const ROOT = path.join(__dirname, '..');
const DECISIONS = path.join(ROOT, 'docs', 'decisions.md');

/** A heading's anchor as GitHub makes it: lowercase, punctuation but `-` and `_` dropped, spaces as `-`. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function filesUnder(dir: string, ext: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith(ext) && !file.split(path.sep).includes('generated'))
    .map((file) => path.join(dir, file));
}

describe('citations of docs/decisions.md', () => {
  const anchors = new Set(
    [...fs.readFileSync(DECISIONS, 'utf8').matchAll(/^#+ (.+)$/gm)].map((match) => anchorOf(match[1])),
  );
  const citations = [
    ...filesUnder(path.join(ROOT, 'src'), '.ts'),
    ...filesUnder(path.join(ROOT, 'test'), '.ts'),
    ...filesUnder(path.join(ROOT, 'docs'), '.md'),
    path.join(ROOT, 'README.md'),
  ].flatMap((file) => {
    const text = fs.readFileSync(file, 'utf8');
    const cited = [...text.matchAll(/docs\/decisions\.md#([\w-]+)/g)].map((match) => match[1]);
    // Inside decisions.md itself, a link to one of its own headings.
    const own = file === DECISIONS ? [...text.matchAll(/\]\(#([\w-]+)\)/g)].map((match) => match[1]) : [];
    return [...cited, ...own].map((anchor) => ({ file: path.relative(ROOT, file), anchor }));
  });

  it('finds the citations to check', () => {
    expect(citations.length).toBeGreaterThan(0);
  });

  it('names a heading of docs/decisions.md in every citation', () => {
    expect(citations.filter(({ anchor }) => !anchors.has(anchor))).toEqual([]);
  });
});
