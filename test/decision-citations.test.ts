import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { anchorOf, anchorsOfPage } from './support/markdown';

/**
 * The decisions live on reference pages (`docs/reference/*.md`, one subject a page), each rule a
 * heading, cited by its anchor (`docs/reference/callers.md#who-may-write`), which does not move when
 * others are added; `docs/decisions.md` lists them all, and every anchor it ever had still leads
 * from there to its rule. Every citation must name a heading that is there, and no rule is cited by
 * a number.
 */
const ROOT = path.join(__dirname, '..');
const INDEX = 'docs/decisions.md';
const REFERENCE = 'docs/reference';

/** A rule named by a number: the word "rule" or "rules", a space, digits. Numbers move when rules are added. */
const RULE_NUMBER = /\brules? \d+/gi;

/**
 * Applied migrations keep their text as it was: the migration runner records each one's checksum
 * and warns at start when an applied one was edited. Their comments may cite the anchors and
 * numbers of old.
 */
const KEPT_AS_APPLIED = /^prisma\/migrations\//;

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
  .split('\n')
  .filter((file) => file && fs.existsSync(path.join(ROOT, file)));
const texts = tracked.map((file) => ({ file, text: read(file) }));

/** The reference pages, each with its headings (level: 2 for ##) and every anchor it offers. */
const pages = fs
  .readdirSync(path.join(ROOT, REFERENCE))
  .filter((name) => name.endsWith('.md'))
  .map((name) => {
    const file = `${REFERENCE}/${name}`;
    const text = read(file);
    const headings = text.split('\n').flatMap((line) => {
      const match = /^(#{1,6}) (.+)$/.exec(line);
      return match ? [{ level: match[1].length, anchor: anchorOf(match[2]) }] : [];
    });
    return { file, headings, anchors: anchorsOfPage(text) };
  });

/**
 * A citation of a decision: `docs/reference/<page>.md#<anchor>` anywhere, `docs/decisions.md#<anchor>`
 * (the index's old names), or a Markdown link to either.
 */
const CITATION = /(?:docs\/|\]\((\.\.\/)*(?:docs\/)?)((?:reference\/)?[\w-]+\.md)#([\w-]+)/g;
const citations = texts
  .filter(({ file }) => !KEPT_AS_APPLIED.test(file))
  .flatMap(({ file, text }) =>
    [...text.matchAll(CITATION)].map(([whole, up, page, anchor]) => {
      // A link between reference pages names its neighbour by its file name alone; `../` leaves docs/reference/.
      const beside = file.startsWith(`${REFERENCE}/`) && !whole.startsWith('docs/') && up === undefined;
      return { file, page: beside ? `${REFERENCE}/${page}` : `docs/${page}`, anchor };
    }),
  )
  .filter(({ page }) => page === INDEX || page.startsWith(`${REFERENCE}/`));

describe('the decisions, on their reference pages', () => {
  it('are there, a page a subject, with many rules (this test reads the files it should)', () => {
    expect(pages.length).toBeGreaterThan(5);
    expect(pages.flatMap(({ headings }) => headings.filter(({ level }) => level === 2)).length).toBeGreaterThan(40);
    expect(citations.length).toBeGreaterThan(100);
  });

  it('are cited by anchors that exist, in every citation', () => {
    const anchorsOf = new Map([
      [INDEX, new Set(anchorsOfPage(read(INDEX)))],
      ...pages.map(({ file, anchors }) => [file, new Set(anchors)] as const),
    ]);
    expect(citations.filter(({ page, anchor }) => !anchorsOf.get(page)?.has(anchor))).toEqual([]);
  });

  it('give every rule an anchor no other page has, and keep no name twice', () => {
    const all = pages.flatMap(({ anchors }) => anchors);
    expect(all.filter((anchor, i) => all.indexOf(anchor) !== i)).toEqual([]);
  });

  it('are all listed in docs/decisions.md, whose every anchor leads, on its line, to the page that has it', () => {
    const index = read(INDEX).split('\n');
    const pageOf = new Map(pages.flatMap(({ file, anchors }) => anchors.map((anchor) => [anchor, file] as const)));
    const listed = index.flatMap((line) => anchorsOfPage(line).map((anchor) => ({ anchor, line })));
    const misled = listed.filter(({ anchor, line }) => {
      const page = pageOf.get(anchor);
      const link = /\]\((reference\/[\w-]+\.md)(?:#[\w-]+)?\)/.exec(line)?.[1];
      // A section's heading in the index names its page on the line after it.
      return page !== undefined && link !== undefined && `docs/${link}` !== page;
    });
    expect(misled).toEqual([]);
    const offered = new Set(listed.map(({ anchor }) => anchor));
    expect([...pageOf.keys()].filter((anchor) => !offered.has(anchor))).toEqual([]);
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
   * The decisions (every heading below a page's title) that nothing shows a test for: no file under
   * test/ cites them, and no row of docs/architecture.md's "Where each rule lives" that cites them
   * names a test. A new decision must have one; one of these that gets one leaves the list.
   */
  const UNCHECKED = [
    'what-a-bike-looks-like',
    'how-a-handle-is-made',
    'the-order-of-a-list',
    'error-answers',
    'can-a-request-cause-a-5xx',
    'what-a-5xx-on-a-write-means',
    'limits-on-a-request-and-its-connection',
    'which-database-an-event-stream-reads',
    'two-host-lines-in-one-request',
    'tables-and-columns',
    'prisma-and-sql-compiled-once',
  ];

  it('shows a test for every decision but the few listed, and the list holds only decisions still without one', () => {
    const citedByTests = new Set(citations.filter(({ file }) => file.startsWith('test/')).map(({ anchor }) => anchor));
    // A row of the architecture page's tables: the decisions its first cell cites, the tests its last names.
    const rows = read('docs/architecture.md')
      .split('\n')
      .filter((line) => line.startsWith('|'))
      .map((line) => line.split('|').slice(1, -1));
    const mapped = new Set(
      rows
        .filter((cells) => /`test\/[^`]+`/.test(cells[cells.length - 1] ?? ''))
        .flatMap((cells) =>
          [...cells[0].matchAll(/(?:decisions|reference\/[\w-]+)\.md#([\w-]+)/g)].map((match) => match[1]),
        ),
    );
    const decisions = pages.flatMap(({ headings }) =>
      headings.filter(({ level }) => level > 1).map(({ anchor }) => anchor),
    );
    const unchecked = decisions.filter((anchor) => !citedByTests.has(anchor) && !mapped.has(anchor));
    expect(unchecked.sort()).toEqual([...UNCHECKED].sort());
  });
});

/**
 * Code and configuration cite the other guides the same way (`docs/running-as-root.md#proving-a-server-is-ours`,
 * for a rule that lives there): each such citation must name a heading of that page. (Links between
 * Markdown files are test/docs-links.test.ts's.)
 */
describe('citations of the other docs/ pages by anchor', () => {
  const files = tracked.filter((file) => !file.endsWith('.md') && !KEPT_AS_APPLIED.test(file));
  const cited = files.flatMap((file) =>
    [...read(file).matchAll(/docs\/([\w-]+\.md)#([\w-]+)/g)]
      .filter(([, page]) => `docs/${page}` !== INDEX)
      .map(([, page, anchor]) => ({ file, page, anchor })),
  );

  it('finds some (this test reads the files it should)', () => {
    expect(cited.length).toBeGreaterThan(0);
  });

  it('names a heading of a page that exists, in every one', () => {
    const anchorsOf = (page: string) =>
      fs.existsSync(path.join(ROOT, 'docs', page)) ? new Set(anchorsOfPage(read(`docs/${page}`))) : new Set<string>();
    expect(cited.filter(({ page, anchor }) => !anchorsOf(page).has(anchor))).toEqual([]);
  });
});
