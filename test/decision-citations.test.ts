import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { anchorOf, anchorsOfPage } from './support/markdown';

/**
 * Code, configuration and docs cite a decision by its heading's anchor
 * (`docs/decisions.md#who-may-write`), which does not move when others are added: every
 * such citation must name a heading that is there, and no rule is cited by a number.
 */
const ROOT = path.join(__dirname, '..');
const DECISIONS = 'docs/decisions.md';

/** A rule named by a number: the word "rule" or "rules", a space, digits. Numbers move when rules are added. */
const RULE_NUMBER = /\brules? \d+/gi;

/**
 * Applied migrations keep their text as it was: the migration runner records each one's checksum
 * and warns at start when an applied one was edited. Their comments may cite the numbers of old.
 */
const KEPT_AS_APPLIED = /^prisma\/migrations\//;

describe('citations of docs/decisions.md by anchor', () => {
  const page = fs.readFileSync(path.join(ROOT, DECISIONS), 'utf8');
  // Each heading's level (2 for ##) and anchor.
  const headings = page.split('\n').flatMap((line) => {
    const match = /^(#{1,6}) (.+)$/.exec(line);
    return match ? [{ level: match[1].length, anchor: anchorOf(match[2]) }] : [];
  });
  // The headings' anchors, and the names renamed headings kept (`<a id="...">`).
  const all = anchorsOfPage(page);
  const anchors = new Set(all);
  // Every tracked file, as git lists it (no build output, no dependencies).
  const files = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
  const texts = files.map((file) => ({ file, text: fs.readFileSync(path.join(ROOT, file), 'utf8') }));
  const citations = texts.flatMap(({ file, text }) => {
    // `docs/decisions.md#bodies`, or a link from beside it in docs/: `](decisions.md#bodies)`.
    const cited = [...text.matchAll(/(?:docs\/|\]\()decisions\.md#([\w-]+)/g)].map((match) => match[1]);
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

  it('gives every heading an anchor of its own (a second one would be renamed "-1"), and keeps no name twice', () => {
    expect(all.filter((anchor, i) => all.indexOf(anchor) !== i)).toEqual([]);
  });

  it('cites no rule by a number', () => {
    const byNumber = texts
      .filter(({ file }) => !KEPT_AS_APPLIED.test(file))
      .flatMap(({ file, text }) =>
        text
          .split('\n')
          .flatMap((line, i) => (line.match(RULE_NUMBER) ?? []).map((found) => `${file}:${i + 1}: ${found}`)),
      );
    expect(byNumber).toEqual([]);
  });

  /**
   * The decisions (every heading below the page's sections) that nothing shows a test for: no file
   * under test/ cites them, and no row of docs/architecture.md's "Where each rule lives" that cites
   * them names a test. A new decision must have one; one of these that gets one leaves the list.
   */
  const UNCHECKED = [
    'what-a-bike-looks-like',
    'how-a-handle-is-made',
    'the-order-of-a-list',
    'error-answers',
    'can-a-request-cause-a-5xx',
    'what-a-5xx-on-a-write-means',
    'a-database-that-is-busy-down-or-hung',
    'limits-on-a-request-and-its-connection',
    'which-database-an-event-stream-reads',
    'two-host-lines-in-one-request',
    'tables-and-columns',
    'prisma-and-sql-compiled-once',
  ];

  it('shows a test for every decision but the few listed, and the list holds only decisions still without one', () => {
    const citedByTests = new Set(citations.filter(({ file }) => file.startsWith('test/')).map(({ anchor }) => anchor));
    // A row of the architecture page's tables: the decisions its first cell cites, the tests its last names.
    const rows = fs
      .readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('|'))
      .map((line) => line.split('|').slice(1, -1));
    const mapped = new Set(
      rows
        .filter((cells) => /`test\/[^`]+`/.test(cells[cells.length - 1] ?? ''))
        .flatMap((cells) => [...cells[0].matchAll(/decisions\.md#([\w-]+)/g)].map((match) => match[1])),
    );
    // The decisions themselves: the headings below the page's title and its sections.
    const decisions = headings.filter(({ level }) => level > 2).map(({ anchor }) => anchor);
    expect(decisions.length).toBeGreaterThan(40);
    const unchecked = decisions.filter((anchor) => !citedByTests.has(anchor) && !mapped.has(anchor));
    expect(unchecked).toEqual(UNCHECKED);
  });
});

/**
 * Code and configuration cite the other guides the same way (`docs/running-as-root.md#proving-a-server-is-ours`,
 * for a rule that lives there): each such citation must name a heading of that page. (Links between
 * Markdown files are test/docs-links.test.ts's.)
 */
describe('citations of the other docs/ pages by anchor', () => {
  const files = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((file) => file && !file.endsWith('.md') && !KEPT_AS_APPLIED.test(file))
    .filter((file) => fs.existsSync(path.join(ROOT, file)));
  const citations = files.flatMap((file) =>
    [...fs.readFileSync(path.join(ROOT, file), 'utf8').matchAll(/docs\/([\w-]+\.md)#([\w-]+)/g)]
      .filter(([, page]) => `docs/${page}` !== DECISIONS)
      .map(([, page, anchor]) => ({ file, page, anchor })),
  );

  it('finds some (this test reads the files it should)', () => {
    expect(citations.length).toBeGreaterThan(0);
  });

  it('names a heading of a page that exists, in every one', () => {
    const anchorsOf = (page: string) =>
      fs.existsSync(path.join(ROOT, 'docs', page))
        ? new Set(anchorsOfPage(fs.readFileSync(path.join(ROOT, 'docs', page), 'utf8')))
        : new Set<string>();
    expect(citations.filter(({ page, anchor }) => !anchorsOf(page).has(anchor))).toEqual([]);
  });
});
