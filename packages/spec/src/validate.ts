import type { ErrorObject, ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { SchemaError } from "./errors.js";

/**
 * Keys that would reach Object.prototype (or shadow it) when a parsed document is spread or merged.
 * JSON.parse creates them as own keys, so they are refused everywhere, not only in closed objects.
 */
const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);

/** Documents are small; anything deeper is hostile and would overflow the stack of a recursive walk. */
const MAX_DEPTH = 64;

let sharedAjv: Ajv2020 | undefined;

function ajv(): Ajv2020 {
  sharedAjv ??= new Ajv2020({ allErrors: false, strict: true });
  return sharedAjv;
}

/** RFC 6901 escaping of one reference token. */
export function pointerToken(key: string | number): string {
  return String(key).replaceAll("~", "~0").replaceAll("/", "~1");
}

function findForbiddenKey(value: unknown, pointer: string, depth: number, documentName: string): void {
  if (value === null || typeof value !== "object") return;
  if (depth > MAX_DEPTH) {
    throw new SchemaError(
      `${documentName}: ${pointer}: nested deeper than ${MAX_DEPTH} levels`,
      pointer,
      documentName,
    );
  }
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      findForbiddenKey(item, `${pointer}/${i}`, depth + 1, documentName);
    });
    return;
  }
  for (const key of Object.keys(value)) {
    const at = `${pointer}/${pointerToken(key)}`;
    if (FORBIDDEN_KEYS.has(key)) {
      throw new SchemaError(`${documentName}: ${at}: forbidden key "${key}"`, at, documentName);
    }
    findForbiddenKey((value as Record<string, unknown>)[key], at, depth + 1, documentName);
  }
  // Object.keys skips a non-enumerable own __proto__; JSON.parse never makes one, but be exact.
  if (Object.hasOwn(value, "__proto__")) {
    const at = `${pointer}/__proto__`;
    throw new SchemaError(`${documentName}: ${at}: forbidden key "__proto__"`, at, documentName);
  }
}

function describe(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  const extra = typeof params.additionalProperty === "string" ? ` ("${params.additionalProperty}")` : "";
  const allowed = Array.isArray(params.allowedValues) ? ` ${JSON.stringify(params.allowedValues)}` : "";
  return `${error.message ?? "is invalid"}${extra}${allowed}`;
}

/**
 * Compiles a JSON Schema (draft 2020-12) into a checking function that returns its input typed as T, or
 * throws SchemaError naming the document, the JSON pointer that failed ("/" for the root) and the reason.
 * Compilation happens on first use so importing a module full of schemas costs nothing.
 */
export function makeValidator<T>(schema: object, documentName: string): (value: unknown) => T {
  let compiled: ValidateFunction | undefined;
  return (value: unknown): T => {
    findForbiddenKey(value, "", 0, documentName);
    compiled ??= ajv().compile(schema);
    if (compiled(value)) return value as T;
    const error = compiled.errors?.[0];
    const pointer = error?.instancePath ? error.instancePath : "/";
    const reason = error ? describe(error) : "is invalid";
    throw new SchemaError(`${documentName}: ${pointer}: ${reason}`, pointer, documentName);
  };
}
