/** GitHub's anchor for a Markdown heading: lowercase, punctuation dropped, spaces as hyphens. */
export const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

/**
 * Every anchor a Markdown page offers, in the order it has them: each heading's, and each
 * `<a id="name"></a>` (the name a heading had before it was renamed, kept so that links to it
 * still lead there).
 */
export const anchorsOfPage = (text: string) =>
  text
    .split('\n')
    .flatMap((line) => [
      ...[...line.matchAll(/<a id="([^"]+)"><\/a>/g)].map(([, id]) => id),
      ...(/^#{1,6} (.+)$/.exec(line)?.slice(1).map(anchorOf) ?? []),
    ]);
