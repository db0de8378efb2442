// Resource quantities read by Kubernetes' rules (apimachinery's resource.Quantity), so that a device
// count written `"1k"`, `"1Ki"`, `"1e3"` or `"1000m"` means here what it means to the API server
// and the scheduler: 1000, 1024, 1000 and 1.
// https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/
//
//   <quantity>        ::= <signedNumber><suffix>
//   <signedNumber>    ::= <number> | +<number> | -<number>
//   <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//   <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
//   <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
//   <decimalSI>       ::= m | "" | k | M | G | T | P | E
//   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>

const QUANTITY = /^([+-]?)(\d*)(?:\.(\d*))?(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/;

const BINARY: Readonly<Record<string, number>> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const DECIMAL: Readonly<Record<string, number>> = { m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

/** Exponents past this are no device count (and would make enormous integers). */
const MAX_EXPONENT = 64;

/** An exact quantity: `mantissa × 10^exp10 × 1024^exp1024`. */
interface Exact {
  readonly negative: boolean;
  readonly mantissa: bigint;
  readonly exp10: number;
  readonly exp1024: number;
}

function parseExact(text: string): Exact | undefined {
  const m = QUANTITY.exec(text);
  if (!m) return undefined;
  const [, sign = '', whole = '', fraction = '', suffix = ''] = m;
  if (whole === '' && fraction === '') return undefined; // "", ".", "k"
  let exp10 = -fraction.length;
  let exp1024 = 0;
  if (suffix in BINARY) exp1024 = BINARY[suffix]!;
  else if (suffix in DECIMAL) exp10 += DECIMAL[suffix]!;
  else if (suffix !== '') {
    const e = Number(suffix.slice(1));
    if (!Number.isSafeInteger(e) || Math.abs(e) > MAX_EXPONENT) return undefined;
    exp10 += e;
  }
  return { negative: sign === '-', mantissa: BigInt(`${whole}${fraction}` || '0'), exp10, exp1024 };
}

/**
 * The quantity's value when it is a whole number (`"1000m"` is 1), else undefined; undefined too
 * for text that is not a quantity. Numbers (an unquoted YAML `1`) are read as their decimal text.
 */
export function wholeQuantity(v: unknown): bigint | undefined {
  const text = typeof v === 'number' ? (Number.isFinite(v) ? String(v) : '') : v;
  if (typeof text !== 'string' || text.length > 100) return undefined;
  const q = parseExact(text);
  if (!q) return undefined;
  let n = q.mantissa * 1024n ** BigInt(q.exp1024);
  if (q.exp10 >= 0) n *= 10n ** BigInt(q.exp10);
  else {
    const d = 10n ** BigInt(-q.exp10);
    if (n % d !== 0n) return undefined;
    n /= d;
  }
  return q.negative ? -n : n;
}
