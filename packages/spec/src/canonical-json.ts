import { SchemaError } from "./errors.js";
import { IntegralFloat } from "./exact-json.js";
import { pythonFloatRepr } from "./float.js";
import { pointerToken } from "./validate.js";

/**
 * Python's json sorts str keys by code point; JS sorts by UTF-16 code unit. They disagree when an astral
 * char (surrogate pair, 0xD800..) meets a BMP char in 0xE000..0xFFFF, so compare code points.
 */
export function compareCodePoints(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.codePointAt(i)!;
    const cb = b.codePointAt(j)!;
    if (ca !== cb) return ca - cb;
    i += ca > 0xffff ? 2 : 1;
    j += cb > 0xffff ? 2 : 1;
  }
  return a.length - i - (b.length - j);
}

const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\"',
  "\\": "\\\\",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\b": "\\b",
  "\f": "\\f",
};

function hex4(code: number): string {
  return `\\u${code.toString(16).padStart(4, "0")}`;
}

/** Python `ensure_ascii=True`: everything outside ' '..'~' is escaped, per UTF-16 code unit. */
function asciiString(s: string): string {
  let out = '"';
  for (let k = 0; k < s.length; k++) {
    const ch = s[k]!;
    const code = s.charCodeAt(k);
    const short = SHORT_ESCAPES[ch];
    if (short !== undefined) out += short;
    else if (code < 0x20 || code > 0x7e) out += hex4(code);
    else out += ch;
  }
  return `${out}"`;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Where a value sits, as reference tokens: the JSON pointer is joined only for an error, since building
 * one string per node cost more than printing the document.
 */
type Path = (string | number)[];

function refuse(path: Path, documentName: string, reason: string): never {
  const at = path.length === 0 ? "/" : path.map((t) => `/${pointerToken(t)}`).join("");
  throw new SchemaError(`${documentName}: ${at}: ${reason}`, at, documentName);
}

/** Python `ensure_ascii=False`: only '"', '\\' and C0 controls are escaped. */
function utf8String(s: string, path: Path, documentName: string): string {
  if (LONE_SURROGATE.test(s)) refuse(path, documentName, "string has a lone surrogate (not UTF-8 encodable)");
  let out = '"';
  for (let k = 0; k < s.length; k++) {
    const ch = s[k]!;
    const code = s.charCodeAt(k);
    const short = SHORT_ESCAPES[ch];
    if (short !== undefined) out += short;
    else if (code < 0x20) out += hex4(code);
    else out += ch;
  }
  return `${out}"`;
}

interface Style {
  documentName: string;
  string(s: string, path: Path): string;
  /** A number that is not an integer value, or an IntegralFloat's value. */
  float(n: number, path: Path): string;
}

function integerText(n: number, path: Path, documentName: string): string {
  // Beyond 2^53 a double no longer names one integer, so the text would depend on how it was computed.
  if (!Number.isSafeInteger(n)) refuse(path, documentName, `integer ${n} is outside the safe range`);
  return String(n === 0 ? 0 : n); // -0 prints as 0, as Python's int does
}

function write(value: unknown, path: Path, style: Style, depth: number): string {
  if (depth > 256) refuse(path, style.documentName, "nested too deeply");
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "string":
      return style.string(value, path);
    case "bigint":
      return value.toString();
    case "number":
      return Number.isInteger(value)
        ? integerText(value, path, style.documentName)
        : style.float(value, path);
    case "object": {
      if (value instanceof IntegralFloat) return style.float(value.value, path);
      if (Array.isArray(value)) {
        const parts: string[] = [];
        for (let i = 0; i < value.length; i++) {
          path.push(i);
          parts.push(write(value[i], path, style, depth + 1));
          path.pop();
        }
        return `[${parts.join(",")}]`;
      }
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record)
        .filter((k) => record[k] !== undefined) // like JSON.stringify: an absent optional field
        .sort(compareCodePoints);
      const parts: string[] = [];
      for (const k of keys) {
        const key = style.string(k, path);
        path.push(k);
        parts.push(`${key}:${write(record[k], path, style, depth + 1)}`);
        path.pop();
      }
      return `{${parts.join(",")}}`;
    }
    default:
      return refuse(path, style.documentName, `${typeof value} is not JSON`);
  }
}

/**
 * Seed §3.1 canonical_json: Python `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=True)`.
 * The fingerprint document has no floats, and float text differs between languages, so a non-integer
 * number is refused with a SchemaError rather than printed.
 */
export function canonicalJson(value: unknown): string {
  const documentName = "canonical JSON";
  return write(
    value,
    [],
    {
      documentName,
      string: asciiString,
      float: (n, path) => refuse(path, documentName, `${n} is not an integer (canonical JSON has no floats)`),
    },
    0,
  );
}

/**
 * The control-plane canonical form (seed 003 identity hash): sorted keys, compact separators, raw UTF-8
 * (Python `ensure_ascii=False`), floats as Python's repr. A JS number cannot say whether it was a float,
 * so an integral number prints as an integer; an IntegralFloat (parseJsonExact keeps `1.0` as one) prints
 * as Python's float (`1.0`), and a bigint as its exact digits, so documents read from Python-written
 * files print back to Python's bytes.
 */
export function canonicalJsonUtf8(value: unknown): string {
  const documentName = "canonical JSON (UTF-8)";
  return write(
    value,
    [],
    {
      documentName,
      string: (s, path) => utf8String(s, path, documentName),
      float: (n, path) => {
        // Python prints -0.0 as such, so only the non-JSON values are refused.
        if (!Number.isFinite(n)) refuse(path, documentName, `${n} is not JSON`);
        return pythonFloatRepr(n);
      },
    },
    0,
  );
}
