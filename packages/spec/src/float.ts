import { SchemaError } from "./errors.js";

/**
 * Shortest text that parses back to exactly `t` (ECMAScript Number::toString is shortest round-trip), for
 * times in tokens and manifests. -0, NaN and ±Infinity are refused: JSON cannot carry the last two and -0
 * would silently become 0 in most parsers.
 */
export function formatFloat(t: number, where = "/"): string {
  if (typeof t !== "number" || !Number.isFinite(t)) {
    throw new SchemaError(`float ${where}: ${String(t)} is not a finite number`, where);
  }
  if (Object.is(t, -0)) throw new SchemaError(`float ${where}: -0 is not allowed`, where);
  return String(t);
}

/**
 * Python's `repr(float)` for a finite double: the same shortest digits as JS, but Python switches to
 * exponent form when the decimal exponent is < -4 or >= 16 (written e-05 / e+16), and an integral float
 * keeps its `.0` (`1724000000.0`, `-0.0`). Shared by canonical JSON and the control plane's documents.
 */
export function pythonFloatRepr(x: number): string {
  if (!Number.isFinite(x)) throw new RangeError(`${x} is not a finite number`);
  const [mantissa, expText] = x.toExponential().split("e") as [string, string];
  const negative = mantissa.startsWith("-") || Object.is(x, -0);
  const digits = mantissa.replace("-", "").replace(".", "");
  const exp = Number(expText); // x = d.ddd × 10^exp
  let body: string;
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    body = `${m}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  } else if (exp < 0) {
    body = `0.${"0".repeat(-exp - 1)}${digits}`;
  } else if (digits.length > exp + 1) {
    body = `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  } else {
    body = `${digits}${"0".repeat(exp + 1 - digits.length)}.0`;
  }
  return negative ? `-${body}` : body;
}
