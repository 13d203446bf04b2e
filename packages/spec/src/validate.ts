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

function refuseAt(path: (string | number)[], documentName: string, reason: string): never {
  const pointer = path.map((t) => `/${pointerToken(t)}`).join("");
  throw new SchemaError(`${documentName}: ${pointer}: ${reason}`, pointer, documentName);
}

/**
 * Throws SchemaError at the first own key that could pollute a prototype, or past MAX_DEPTH. It walks every
 * node of every document read, so the JSON pointer is joined from `path` only when it throws.
 */
function findForbiddenKey(value: unknown, path: (string | number)[], documentName: string): void {
  if (value === null || typeof value !== "object") return;
  if (path.length > MAX_DEPTH) refuseAt(path, documentName, `nested deeper than ${MAX_DEPTH} levels`);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      findForbiddenKey(value[i], path, documentName);
      path.pop();
    }
    return;
  }
  for (const key of Object.keys(value)) {
    path.push(key);
    if (FORBIDDEN_KEYS.has(key)) refuseAt(path, documentName, `forbidden key "${key}"`);
    findForbiddenKey((value as Record<string, unknown>)[key], path, documentName);
    path.pop();
  }
  // Object.keys skips a non-enumerable own __proto__; JSON.parse never makes one, but be exact.
  if (Object.hasOwn(value, "__proto__")) {
    path.push("__proto__");
    refuseAt(path, documentName, `forbidden key "__proto__"`);
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
    findForbiddenKey(value, [], documentName);
    compiled ??= ajv().compile(schema);
    if (compiled(value)) return value as T;
    const error = compiled.errors?.[0];
    const pointer = error?.instancePath ? error.instancePath : "/";
    const reason = error ? describe(error) : "is invalid";
    throw new SchemaError(`${documentName}: ${pointer}: ${reason}`, pointer, documentName);
  };
}
