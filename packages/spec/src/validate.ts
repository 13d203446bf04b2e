import type { ErrorObject, ValidateFunction } from "ajv";
import { runtimeAjv } from "#compile-schema";
import { SchemaError } from "./errors.js";

export { AJV_OPTIONS } from "./ajv-options.js";

/**
 * Keys that would reach Object.prototype (or shadow it) when a parsed document is spread or merged.
 * JSON.parse creates them as own keys, so they are refused everywhere, not only in closed objects.
 */
const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);

/** Documents are small; anything deeper is hostile and would overflow the stack of a recursive walk. */
const MAX_DEPTH = 64;

/** What the standalone code exports and Ajv's compile returns: a check that leaves `errors` on itself. */
export type CheckFunction = ((value: unknown) => boolean) & { errors?: ErrorObject[] | null };

/**
 * The first schema makeValidator was given under each $id: what the build precompiles (it loads the
 * package, whose modules make their validators as they load, before any caller can make one).
 */
const firstById = new Map<string, object>();

/**
 * Each schema object given with its build-time code, so a later makeValidator of that same object (a
 * caller's, without code) is checked by it too. Another object, even under a package schema's $id, is a
 * caller's own schema and is compiled at run time.
 */
const precompiledOf = new WeakMap<object, CheckFunction>();

/** The schema's $id when it is a string. */
export function schemaIdOf(schema: object): string | undefined {
  const id = (schema as { $id?: unknown }).$id;
  return typeof id === "string" ? id : undefined;
}

/** The schemas, each with a string $id, that makeValidator has been given first: the build's input. */
export function declaredSchemas(): readonly object[] {
  return [...firstById.values()];
}

/** The build-time code makeValidator checks `schema` with, or undefined when it compiles it at run time. */
export function precompiledCheck(schema: object): CheckFunction | undefined {
  return precompiledOf.get(schema);
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
 * Makes a JSON Schema (draft 2020-12) into a checking function that returns its input typed as T, or
 * throws SchemaError naming the document, the JSON pointer that failed ("/" for the root) and the reason.
 * The package's own validators pass `precompiled`, the build's code for `schema` (its export of
 * generated/validators.js, "#precompiled-validators"); any other schema is compiled by Ajv on first use,
 * so importing a module full of schemas costs nothing. The package makes its validators at module level,
 * each call marked `/* @__PURE__ *\/` (its one effect, recording the schema in declaredSchemas, is for
 * the build, in Node): a bundle keeps only the validators its code reaches, and only their precompiled code.
 */
export function makeValidator<T>(
  schema: object,
  documentName: string,
  precompiled?: CheckFunction,
): (value: unknown) => T {
  const id = schemaIdOf(schema);
  if (id !== undefined && !firstById.has(id)) firstById.set(id, schema);
  if (precompiled !== undefined) precompiledOf.set(schema, precompiled);
  let compiled: CheckFunction | ValidateFunction | undefined = precompiledOf.get(schema);
  return (value: unknown): T => {
    findForbiddenKey(value, [], documentName);
    compiled ??= runtimeAjv().compile(schema);
    if (compiled(value)) return value as T;
    const error = compiled.errors?.[0];
    const pointer = error?.instancePath ? error.instancePath : "/";
    const reason = error ? describe(error) : "is invalid";
    throw new SchemaError(`${documentName}: ${pointer}: ${reason}`, pointer, documentName);
  };
}
