/**
 * Kafka parses topic config values with Java's number parsers and prints them back with Java's
 * toString. Clients see both (accepted spellings such as " 5 ", "+7", "0.5d", "1e-5"; printed
 * forms such as "1.0E-5" and "2.0"), so kcompact reproduces Java's rules rather than JavaScript's.
 */

/** String.trim(): strips every char <= U+0020 from both ends (JavaScript's trim strips Unicode spaces instead). */
export function javaTrim(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && s.charCodeAt(start) <= 0x20) start++;
  while (end > start && s.charCodeAt(end - 1) <= 0x20) end--;
  return s.slice(start, end);
}

const DECIMAL_DIGIT = /^\p{Nd}$/u;

/**
 * Character.digit(c, 10) for one UTF-16 unit: Java accepts any Unicode decimal digit (Arabic-Indic,
 * fullwidth...). Unicode lays each digit set out as ten consecutive code points starting at zero,
 * so the value is the distance from the start of the run of digits, modulo ten.
 */
function digitValue(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c < 0x80 || !DECIMAL_DIGIT.test(s[i]!)) return -1;
  let start = c;
  while (start > c - 9 && DECIMAL_DIGIT.test(String.fromCharCode(start - 1))) start--;
  return (c - start) % 10;
}

function parseJavaInteger(s: string, min: bigint, max: bigint): bigint | null {
  if (s.length === 0) return null;
  let i = 0;
  let negative = false;
  if (s[0] === '-' || s[0] === '+') {
    negative = s[0] === '-';
    i = 1;
    if (s.length === 1) return null;
  }
  let value = 0n;
  for (; i < s.length; i++) {
    const d = digitValue(s, i);
    if (d < 0) return null;
    value = value * 10n + BigInt(d);
  }
  if (negative) value = -value;
  return value < min || value > max ? null : value;
}

/** Long.parseLong, or null where Java throws NumberFormatException. */
export function parseJavaLong(s: string): bigint | null {
  return parseJavaInteger(s, -(2n ** 63n), 2n ** 63n - 1n);
}

/** Integer.parseInt, or null where Java throws NumberFormatException. */
export function parseJavaInt(s: string): number | null {
  const v = parseJavaInteger(s, -(2n ** 31n), 2n ** 31n - 1n);
  return v === null ? null : Number(v);
}

const DECIMAL_FLOAT = /^([+-]?)(NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?)$/;
const HEX_FLOAT = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?[pP]([+-]?\d+)[fFdD]?$/;

/** Double.parseDouble (which trims, takes NaN, Infinity, a type suffix and hex floats), or null where Java throws. */
export function parseJavaDouble(raw: string): number | null {
  const s = javaTrim(raw);
  const dec = DECIMAL_FLOAT.exec(s);
  if (dec) {
    const body = dec[2]!;
    const magnitude = body === 'NaN' ? NaN : body === 'Infinity' ? Infinity : Number(body.replace(/[fFdD]$/, ''));
    return dec[1] === '-' ? -magnitude : magnitude;
  }
  const hex = HEX_FLOAT.exec(s);
  if (!hex) return null;
  const whole = hex[2]!;
  const fraction = hex[3] ?? '';
  if (whole.length + fraction.length === 0) return null;
  const mantissa = Number(BigInt('0x' + (whole + fraction || '0')));
  const magnitude = mantissa * 2 ** (Number(hex[4]) - 4 * fraction.length);
  return hex[1] === '-' ? -magnitude : magnitude;
}

/** Double.toString: "0.5", "2.0", "1.0E-5", "1.0E7", "NaN", "-0.0". */
export function javaDoubleToString(d: number): string {
  if (Number.isNaN(d)) return 'NaN';
  if (d === Infinity) return 'Infinity';
  if (d === -Infinity) return '-Infinity';
  if (d === 0) return Object.is(d, -0) ? '-0.0' : '0.0';
  const sign = d < 0 ? '-' : '';
  const abs = Math.abs(d);
  // toExponential() without an argument gives the shortest digits that read back as the same double.
  const [mantissa, exp] = abs.toExponential().split('e') as [string, string];
  const digits = mantissa.replace('.', '');
  const exponent = Number(exp);
  if (abs >= 1e-3 && abs < 1e7) {
    if (exponent >= 0) {
      const int = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
      const frac = digits.slice(exponent + 1) || '0';
      return `${sign}${int}.${frac}`;
    }
    return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  }
  return `${sign}${digits[0]}.${digits.slice(1) || '0'}E${exponent}`;
}

/**
 * String.split(",") as Kafka's incremental APPEND/SUBTRACT use it: no trimming, trailing empty
 * strings dropped, and a string without a comma (even "") is returned whole.
 */
export function javaSplitComma(s: string): string[] {
  const parts = s.split(',');
  if (parts.length === 1) return parts;
  while (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
  return parts;
}

/** ConfigDef's LIST parsing: trim, then split on commas with Java's ASCII-only whitespace around them. */
export function parseJavaList(raw: string): string[] {
  const trimmed = javaTrim(raw);
  // \x0B (vertical tab) is whitespace to Java's Character.isWhitespace, which the split follows.
  // eslint-disable-next-line no-control-regex
  return trimmed === '' ? [] : trimmed.split(/[ \t\n\x0B\f\r]*,[ \t\n\x0B\f\r]*/);
}
