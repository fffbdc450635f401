/**
 * Exact decimal arithmetic for the reports' figures (docs/reporting.md#exact-figures): a double
 * stands for its shortest round-trip decimal (what String() and PostgreSQL print), and sums and
 * products of those are kept exactly, however large or small, as PostgreSQL's numeric keeps them.
 */
export interface Decimal {
  /** The value is digits × 10^-scale. */
  digits: bigint;
  scale: number;
}

/** A number (its shortest decimal), or a numeric as PostgreSQL prints it. */
export function decimal(value: number | string): Decimal {
  const text = String(value);
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/i.exec(text);
  if (!match) throw new Error(`not a finite decimal: ${text}`);
  const [, sign, whole, fraction = '', exponent = '0'] = match;
  const scale = fraction.length - Number(exponent);
  const digits = BigInt(`${sign}${whole}${fraction}`);
  return scale >= 0 ? { digits, scale } : { digits: digits * 10n ** BigInt(-scale), scale: 0 };
}

const rescale = ({ digits, scale }: Decimal, to: number): bigint => digits * 10n ** BigInt(to - scale);

export function add(a: Decimal, b: Decimal): Decimal {
  const scale = Math.max(a.scale, b.scale);
  return { digits: rescale(a, scale) + rescale(b, scale), scale };
}

export const sum = (values: Decimal[]): Decimal => values.reduce(add, decimal(0));

export const negate = ({ digits, scale }: Decimal): Decimal => ({ digits: -digits, scale });

export const times = (a: Decimal, b: Decimal): Decimal => ({ digits: a.digits * b.digits, scale: a.scale + b.scale });

/** Rounded to `places` decimals, half away from zero, as PostgreSQL's round(numeric, int). */
export function round(value: Decimal, places: number): Decimal {
  if (value.scale <= places) return value;
  const unit = 10n ** BigInt(value.scale - places);
  const magnitude = value.digits < 0n ? -value.digits : value.digits;
  const rounded = (magnitude + unit / 2n) / unit;
  return { digits: value.digits < 0n ? -rounded : rounded, scale: places };
}

/** One text for one value, whatever its scale: `200.00` and `2e2` are both `200`. */
export function exact(value: Decimal | number | string): string {
  let { digits, scale } = typeof value === 'object' ? value : decimal(value);
  while (scale > 0 && digits % 10n === 0n) [digits, scale] = [digits / 10n, scale - 1];
  const sign = digits < 0n ? '-' : '';
  const text = (digits < 0n ? -digits : digits).toString().padStart(scale + 1, '0');
  return scale === 0 ? `${sign}${text}` : `${sign}${text.slice(0, -scale)}.${text.slice(-scale)}`;
}
