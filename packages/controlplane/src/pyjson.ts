import { canonicalJsonUtf8, pythonFloatRepr } from "@zarr-stream/spec";

/**
 * JSON text the way the reference (Python `json.dumps`) writes it, because peers compare bytes of hashed
 * documents and parse the rest. JS numbers do not remember whether they were floats, so fields the
 * reference writes as floats are named by key (`floatKeys`) and print as `1724000000.0`.
 */

export interface PyJsonStyle {
  /** Escape everything outside ' '..'~' as \uXXXX (Python ensure_ascii=True). */
  ensureAscii: boolean;
  sortKeys: boolean;
  /** Python's default separators `, ` and `: ` instead of compact ones. */
  spaced?: boolean;
  /** Keys whose numeric values are Python floats. */
  floatKeys?: ReadonlySet<string>;
}

/** Timestamps the reference stores as Python floats. */
export const TIMESTAMP_KEYS: ReadonlySet<string> = new Set([
  "timestamp",
  "started_at",
  "updated_at",
  "completed_at",
  "created_at",
  "acquired_at",
  "last_heartbeat_at",
  "completed_before",
  "replaced_at",
]);

/** Python's code-point key order; JS sorts UTF-16 code units, which differs for astral characters. */
export function compareCodePoints(a: string, b: string): number {
  const ca = Array.from(a, (c) => c.codePointAt(0)!);
  const cb = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(ca.length, cb.length); i++) {
    if (ca[i] !== cb[i]) return ca[i]! - cb[i]!;
  }
  return ca.length - cb.length;
}

function stringText(s: string, ensureAscii: boolean): string {
  const text = JSON.stringify(s);
  return ensureAscii
    ? text.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
    : text;
}

function numberText(n: number, asFloat: boolean): string {
  if (!Number.isFinite(n)) throw new RangeError(`${n} is not JSON`);
  if (Number.isInteger(n) && !asFloat) return BigInt(n).toString();
  return pythonFloatRepr(n);
}

function write(value: unknown, style: PyJsonStyle, asFloat: boolean): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "string":
      return stringText(value, style.ensureAscii);
    case "number":
      return numberText(value, asFloat);
    case "object": {
      const comma = style.spaced ? ", " : ",";
      if (Array.isArray(value)) return `[${value.map((v) => write(v, style, asFloat)).join(comma)}]`;
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj).filter((k) => obj[k] !== undefined);
      if (style.sortKeys) keys.sort(compareCodePoints);
      const colon = style.spaced ? ": " : ":";
      const parts = keys.map(
        (k) =>
          `${stringText(k, style.ensureAscii)}${colon}${write(obj[k], style, style.floatKeys?.has(k) ?? false)}`,
      );
      return `{${parts.join(comma)}}`;
    }
    default:
      throw new TypeError(`${typeof value} is not JSON`);
  }
}

export function pyDumps(value: unknown, style: PyJsonStyle): string {
  return write(value, style, false);
}

/** WAL lines, run.json, claims, snapshots, LATEST.json: compact, insertion order, ASCII, float timestamps. */
export function envelopeJson(value: unknown): string {
  return pyDumps(value, { ensureAscii: true, sortKeys: false, floatKeys: TIMESTAMP_KEYS });
}

/**
 * Hashed index records: sorted keys, compact, raw UTF-8, integral numbers as integers. One implementation
 * for the whole repo lives in the spec package; it also refuses lone surrogates and unsafe integers.
 */
export const canonicalJson: (value: unknown) => string = canonicalJsonUtf8;

const encoder = new TextEncoder();
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}
