import { parse, stringify } from "lossless-json";
import { SchemaError } from "./errors.js";
import { pythonFloatRepr } from "./float.js";

/**
 * A JSON number whose source text was a float (it had a fraction or an exponent) with an integral value,
 * such as `1.0` or `1e3`. A JS number cannot say it was a float, and Python prints it back as `1.0` /
 * `1000.0`, so hashed documents that came from Python keep this marker to print the same bytes.
 */
export class IntegralFloat {
  constructor(readonly value: number) {}
  valueOf(): number {
    return this.value;
  }
  toJSON(): number {
    return this.value;
  }
}

const INTEGER_TEXT = /^-?\d+$/;

/**
 * Python's json.loads: integer text is an exact int of any size, anything else a float. Safe integers and
 * non-integral floats are JS numbers (their Python text is recoverable from the number); integers beyond
 * 2^53 are bigints; integral floats are IntegralFloat.
 */
function exactNumber(text: string): number | bigint | IntegralFloat {
  if (INTEGER_TEXT.test(text)) {
    const n = Number(text);
    // `-0` is the int 0 to Python; as a JS -0 it would print back as 0 and no longer equal itself.
    return Number.isSafeInteger(n) ? n + 0 : BigInt(text);
  }
  const n = Number(text);
  return Number.isInteger(n) || !Number.isFinite(n) ? new IntegralFloat(n) : n;
}

/**
 * A string (skipped whole) or a number token. Outside strings, valid JSON has digits only in numbers, so
 * scanning with this finds every number a document holds.
 */
const STRING_OR_NUMBER = /"(?:[^"\\]|\\.)*"|-?\d+(\.\d+)?([eE][+-]?\d+)?/g;

/**
 * Whether JSON.parse reads every number of `text` as exactNumber does: integers of at most 15 digits
 * (safe) other than `-0`, and floats that are neither integral nor out of range. Such text (most control-plane lines:
 * small counters and fractional timestamps) skips lossless-json, which costs about 2.5 times as much CPU.
 * Invalid text may pass; JSON.parse then refuses it.
 */
function jsonParseIsExact(text: string): boolean {
  STRING_OR_NUMBER.lastIndex = 0;
  for (let m = STRING_OR_NUMBER.exec(text); m !== null; m = STRING_OR_NUMBER.exec(text)) {
    const token = m[0];
    if (token.charCodeAt(0) === 0x22) continue; // a string
    if (m[1] === undefined && m[2] === undefined) {
      if (token.length > 15 || token === "-0") return false;
    } else {
      const n = Number(token);
      if (Number.isInteger(n) || !Number.isFinite(n)) return false;
    }
  }
  return true;
}

/**
 * JSON.parse that loses no number: the result prints back through canonicalJsonUtf8 to the bytes Python's
 * `json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False)` gives.
 * Malformed text is a SchemaError naming the document. A key given twice in one object takes its last
 * value (as Python does) when JSON.parse reads the text, and is refused by lossless-json otherwise.
 */
export function parseJsonExact(text: string, documentName = "JSON document"): unknown {
  try {
    return jsonParseIsExact(text) ? JSON.parse(text) : parse(text, null, exactNumber);
  } catch (e) {
    throw new SchemaError(`${documentName}: not valid JSON (${(e as Error).message})`, "/", documentName);
  }
}

const INTEGRAL_FLOAT = [
  {
    test: (v: unknown) => v instanceof IntegralFloat,
    stringify: (v: unknown) => pythonFloatRepr((v as IntegralFloat).value),
  },
];

/**
 * JSON.stringify for what parseJsonExact read: bigints print their digits and IntegralFloats Python's
 * float (`1.0`), so a document read, changed and written back keeps every number it did not change.
 * `indent` and the undefined result (for undefined) as JSON.stringify's.
 */
export function stringifyJsonExact(value: unknown, indent?: number): string | undefined {
  return stringify(value, undefined, indent, INTEGRAL_FLOAT);
}

/** A number read by parseJsonExact (or a plain JS number), as a JS number; bigints may round. */
export function approximateNumber(v: unknown): number | undefined {
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  if (v instanceof IntegralFloat) return v.value;
  return undefined;
}
