import { canonicalJsonUtf8, IntegralFloat, pythonFloatRepr, SchemaError } from "@zarr-stream/spec";
import { InexactNumber } from "./errors.js";

/**
 * JSON text the way the reference (Python `json.dumps`) writes it, because peers compare bytes of hashed
 * documents and parse the rest. Numbers print exactly or not at all: a bigint prints its digits, an
 * IntegralFloat (how parseJsonExact keeps `1.0`) prints as Python's float, and a JS number prints as an
 * integer only while it names one integer (|n| ≤ 2^53−1); anything else is an InexactNumber. JS numbers do
 * not remember whether they were floats, so fields the reference writes as floats are named by key
 * (`floatKeys`) and print as `1724000000.0`.
 */

export interface PyJsonStyle {
  /** Escape everything outside ' '..'~' as \uXXXX (Python ensure_ascii=True). */
  ensureAscii: boolean;
  sortKeys: boolean;
  /** Python's default separators `, ` and `: ` instead of compact ones. */
  spaced?: boolean;
  /** Keys whose numeric values are Python floats. */
  floatKeys?: ReadonlySet<string>;
  /** Names the document in errors. */
  documentName?: string;
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

/** `n` as a value that prints as Python's float: `float(x)` in the reference becomes `1.0`, not `1`. */
export function pyFloat(n: number): number | IntegralFloat {
  return Number.isInteger(n) ? new IntegralFloat(n) : n;
}

type Path = (string | number)[];

function pointer(path: Path): string {
  return path.length === 0
    ? "/"
    : path.map((t) => `/${String(t).replace(/~/g, "~0").replace(/\//g, "~1")}`).join("");
}

function stringText(s: string, ensureAscii: boolean): string {
  const text = JSON.stringify(s);
  return ensureAscii
    ? text.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
    : text;
}

function floatText(n: number, path: Path, doc: string): string {
  // Python would write Infinity / NaN, which is not JSON and which JSON readers (ours included) refuse.
  if (!Number.isFinite(n))
    throw new InexactNumber(`${doc}: ${pointer(path)}: ${n} is not JSON`, pointer(path), doc);
  return pythonFloatRepr(n);
}

function numberText(n: number, asFloat: boolean, path: Path, doc: string): string {
  if (!Number.isInteger(n) || asFloat) return floatText(n, path, doc);
  // Beyond 2^53 a double stands for many integers, and the caller's digits are already gone.
  if (!Number.isSafeInteger(n)) {
    throw new InexactNumber(
      `${doc}: ${pointer(path)}: integer ${n} is beyond 2^53 as a JS number and cannot be written exactly (pass a bigint)`,
      pointer(path),
      doc,
    );
  }
  return String(n === 0 ? 0 : n); // -0 is the integer 0, as Python's int has no sign on zero
}

function write(value: unknown, style: PyJsonStyle, asFloat: boolean, path: Path): string {
  const doc = style.documentName ?? "JSON document";
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "string":
      return stringText(value, style.ensureAscii);
    case "number":
      return numberText(value, asFloat, path, doc);
    case "bigint":
      return value.toString();
    case "object": {
      if (value instanceof IntegralFloat) return floatText(value.value, path, doc);
      const comma = style.spaced ? ", " : ",";
      if (Array.isArray(value)) {
        const parts: string[] = [];
        for (let i = 0; i < value.length; i++) {
          path.push(i);
          parts.push(write(value[i], style, asFloat, path));
          path.pop();
        }
        return `[${parts.join(comma)}]`;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        // A Date, Map or class instance would print as {} or as its fields, silently not what was meant.
        throw new SchemaError(
          `${doc}: ${pointer(path)}: ${proto?.constructor?.name ?? "object"} is not JSON`,
          pointer(path),
          doc,
        );
      }
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj).filter((k) => obj[k] !== undefined);
      if (style.sortKeys) keys.sort(compareCodePoints);
      const colon = style.spaced ? ": " : ":";
      const parts: string[] = [];
      for (const k of keys) {
        path.push(k);
        parts.push(
          `${stringText(k, style.ensureAscii)}${colon}${write(obj[k], style, style.floatKeys?.has(k) ?? false, path)}`,
        );
        path.pop();
      }
      return `{${parts.join(comma)}}`;
    }
    default:
      throw new SchemaError(`${doc}: ${pointer(path)}: ${typeof value} is not JSON`, pointer(path), doc);
  }
}

export function pyDumps(value: unknown, style: PyJsonStyle): string {
  return write(value, style, false, []);
}

/**
 * WAL lines, run.json, claims, snapshot meta, LATEST.json: compact, insertion order, ASCII, float
 * timestamps. These documents are composed here, where a timestamp is a JS number from the clock.
 */
export function envelopeJson(value: unknown, documentName = "control-plane document"): string {
  return pyDumps(value, { ensureAscii: true, sortKeys: false, floatKeys: TIMESTAMP_KEYS, documentName });
}

/**
 * Snapshot lines: compact, insertion order, ASCII, every number as it was read. A snapshot record is a
 * WAL record read back exactly (and projection defaults made Python floats by pyFloat), so no key decides
 * a number's type: an integer a peer wrote under `timestamp` stays an integer, as in the reference's own
 * rebuild.
 */
export function recordJson(value: unknown, documentName = "snapshot record"): string {
  return pyDumps(value, { ensureAscii: true, sortKeys: false, documentName });
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
