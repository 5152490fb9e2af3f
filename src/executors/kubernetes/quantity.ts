/**
 * Kubernetes resource quantities (`500m`, `1.5`, `2Gi`, `1e3`), read exactly (as a fraction of big
 * integers), so an overwrite can be compared with its `*_overwrite_max_allowed` bound the way
 * Kubernetes compares them: `1000m` is `1`, `1Gi` is more than `1G`.
 */

/** Decimal SI suffixes as powers of ten, binary SI ones as powers of two. */
const DECIMAL: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

const FORM = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/;

/** The text a quantity must match; for schema messages. */
export const QUANTITY_FORM = 'a Kubernetes quantity such as "500m", "1.5", "512Mi" or "2Gi"';

/** A quantity as `num / den`. */
export interface Quantity {
  num: bigint;
  den: bigint;
}

/** The quantity `text` stands for; undefined when it is not one. */
export function parseQuantity(text: string): Quantity | undefined {
  const match = FORM.exec(text.trim());
  if (!match) return undefined;
  const [, sign = '', digits = '', exponent, suffix = ''] = match;
  const [whole = '', fraction = ''] = digits.split('.');
  let num = BigInt(`${whole}${fraction}` || '0') * (sign === '-' ? -1n : 1n);
  let den = 10n ** BigInt(fraction.length);
  const power10 = exponent ? Number(exponent.slice(1)) : (DECIMAL[suffix] ?? 0);
  if (Math.abs(power10) > 40) return undefined;
  if (power10 >= 0) num *= 10n ** BigInt(power10);
  else den *= 10n ** BigInt(-power10);
  const power2 = BINARY[suffix];
  if (power2 !== undefined) num *= 2n ** BigInt(power2);
  return { num, den };
}

/** -1, 0 or 1 as `a` is less than, equal to or more than `b`. */
export function compareQuantities(a: Quantity, b: Quantity): number {
  const left = a.num * b.den;
  const right = b.num * a.den;
  return left < right ? -1 : left > right ? 1 : 0;
}
