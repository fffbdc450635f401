/**
 * Numbers are IEEE-754 doubles (docs/reference/bike.md#numbers): a JSON number reads back as the
 * double nearest to what was sent. Two kinds of literal have no such double, yet JSON.parse
 * turns them into one without a word: a non-zero number below the smallest double becomes 0
 * (`1e-400`), and one beyond the largest becomes Infinity (`1e400`). Only the literal's text
 * tells them apart from a `0` the client meant, so the body's text is read once more here.
 * (Node 20's JSON.parse hands a reviver no source text; later versions do, as its third argument.)
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;

const E = 0x65;
const CAPITAL_E = 0x45;
/**
 * Without an exponent a literal needs more than 300 characters to leave the doubles' range
 * (1e308 has 309 digits; 5e-324 needs 325 after the point): shorter ones are not even parsed.
 */
const PLAIN_SAFE_LENGTH = 300;

/** Characters that can follow the first one in a JSON number, but for the exponent's `e`: digits, `.`, `+`, `-`. */
function inNumber(c: number): boolean {
  return (c >= ZERO && c <= NINE) || c === 0x2e || c === 0x2b || c === MINUS;
}

/** The index just past the string whose opening quote is at `from - 1`. */
function endOfString(json: string, from: number): number {
  for (;;) {
    const quote = json.indexOf('"', from);
    if (quote === -1) return json.length;
    let backslashes = 0;
    while (json.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    // An even run of backslashes escapes itself, not the quote.
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** True when the literal's double is infinite, or 0 although the literal is not a zero. */
function isLost(literal: string): boolean {
  const value = Number(literal);
  if (!Number.isFinite(value)) return true;
  if (value !== 0) return false;
  const exponent = literal.search(/[eE]/);
  return /[1-9]/.test(exponent === -1 ? literal : literal.slice(0, exponent));
}

/**
 * The first number literal in `json` (text JSON.parse has accepted) that has no nearest double:
 * one that underflows to 0 or overflows to ±Infinity; undefined when every number has one.
 * One pass over the text, skipping strings; literals true, false and null hold no digit.
 */
export function numberWithoutDouble(json: string): string | undefined {
  for (let i = 0; i < json.length;) {
    const c = json.charCodeAt(i);
    if (c === QUOTE) {
      i = endOfString(json, i + 1);
    } else if (c === MINUS || (c >= ZERO && c <= NINE)) {
      let end = i + 1;
      let exponent = false;
      for (let d = json.charCodeAt(end); end < json.length; d = json.charCodeAt(++end)) {
        if (d === E || d === CAPITAL_E) exponent = true;
        else if (!inNumber(d)) break;
      }
      if (exponent || end - i > PLAIN_SAFE_LENGTH) {
        const literal = json.slice(i, end);
        if (isLost(literal)) return literal;
      }
      i = end;
    } else {
      i++;
    }
  }
  return undefined;
}
