import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Code, configuration and docs cite a decision by its heading's anchor
 * (`docs/decisions.md#who-holds-which-secret`), which does not move when others are added: every
 * such citation must name a heading that is there.
 */
const ROOT = path.join(__dirname, '..');
const DECISIONS = 'docs/decisions.md';

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

describe('citations of docs/decisions.md by anchor', () => {
  const anchors = new Set(
    fs
      .readFileSync(path.join(ROOT, DECISIONS), 'utf8')
      .split('\n')
      .flatMap((line) => /^#{1,6} (.+)$/.exec(line)?.[1] ?? [])
      .map(anchorOf),
  );
  // Every tracked file, as git lists it (no build output, no dependencies).
  const files = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
  const citations = files.flatMap((file) => {
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    const cited = [...text.matchAll(/docs\/decisions\.md#([\w-]+)/g)].map((match) => match[1]);
    // Inside the page itself, a link to one of its own headings.
    const inPage = file === DECISIONS ? [...text.matchAll(/\]\(#([\w-]+)\)/g)].map((match) => match[1]) : [];
    return [...cited, ...inPage].map((anchor) => ({ file, anchor }));
  });

  it('finds some (this test reads the files it should)', () => {
    expect(citations.length).toBeGreaterThan(0);
  });

  it('names a heading that exists, in every one', () => {
    expect(citations.filter(({ anchor }) => !anchors.has(anchor))).toEqual([]);
  });
});
