import { parse } from "lossless-json";
import { SchemaError } from "./errors.js";

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
    return Number.isSafeInteger(n) ? n : BigInt(text);
  }
  const n = Number(text);
  return Number.isInteger(n) || !Number.isFinite(n) ? new IntegralFloat(n) : n;
}

/**
 * JSON.parse that loses no number: the result prints back through canonicalJsonUtf8 to the bytes Python's
 * `json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False)` gives.
 * Malformed text is a SchemaError naming the document.
 */
export function parseJsonExact(text: string, documentName = "JSON document"): unknown {
  try {
    return parse(text, null, exactNumber);
  } catch (e) {
    throw new SchemaError(`${documentName}: not valid JSON (${(e as Error).message})`, "/", documentName);
  }
}

/** A number read by parseJsonExact (or a plain JS number), as a JS number; bigints may round. */
export function approximateNumber(v: unknown): number | undefined {
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  if (v instanceof IntegralFloat) return v.value;
  return undefined;
}
