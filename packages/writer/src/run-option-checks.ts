import { SchemaError } from "@zarr-stream/spec";
import type { RunOptions } from "./run-options.js";

/** The methods a run calls on a store object (the store package's Store, conditional methods aside). */
const STORE_METHODS = [
  "get",
  "getRange",
  "getSuffix",
  "size",
  "put",
  "putIfAbsent",
  "delete",
  "list",
] as const;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return JSON.stringify(v);
  return typeof v === "object" || typeof v === "function" ? `a ${typeof v}` : `${typeof v} ${String(v)}`;
}

/** RFC 6901: a dim name as one JSON pointer token. */
const token = (name: string) => name.replace(/~/g, "~0").replace(/\//g, "~1");

function fail(pointer: string, message: string): never {
  throw new SchemaError(`StreamRun.open: ${pointer}: ${message}`, pointer, "RunOptions");
}

/**
 * The shape of StreamRun.open's options, checked before the run opens its store: a missing store, a
 * region that is not dim -> [start, stop] or a callback that is not a function is a SchemaError with the
 * JSON pointer of the option, where it would otherwise surface later as a TypeError from inside the run.
 * Values within a well-formed shape (an id below the count, an aligned region, a valid schema) are
 * checked by runRank and the writer, which know what they must be.
 */
export function checkRunOptions(options: unknown): asserts options is RunOptions {
  if (!isPlainObject(options)) {
    fail("", `the options must be an object ({ store, schema, region, ... }), got ${describe(options)}`);
  }
  const { store } = options;
  if (typeof store === "string") {
    if (store.trim() === "") fail("/store", "the store URL is empty");
  } else if (isPlainObject(store)) {
    const missing = STORE_METHODS.filter((m) => typeof store[m] !== "function");
    if (typeof store.url !== "string" || missing.length > 0) {
      fail(
        "/store",
        `is not a Store (${[...(typeof store.url === "string" ? [] : ["url"]), ...missing].join(", ")} missing): pass a store URL or an opened store`,
      );
    }
  } else {
    fail(
      "/store",
      `must be a store URL (s3://bucket/prefix, a path, file://, memory://) or an opened store, got ${describe(store)}`,
    );
  }
  if (options.job !== undefined && (typeof options.job !== "string" || options.job === ""))
    fail("/job", `must be a non-empty string, got ${describe(options.job)}`);
  for (const name of ["id", "count"] as const) {
    const v = options[name];
    if (v !== undefined && typeof v !== "number") fail(`/${name}`, `must be an integer, got ${describe(v)}`);
  }
  if (options.env !== undefined) {
    if (!isPlainObject(options.env))
      fail("/env", `must be an object of variables, got ${describe(options.env)}`);
    for (const [name, value] of Object.entries(options.env)) {
      if (value !== undefined && typeof value !== "string") {
        fail(`/env/${token(name)}`, `must be a string, got ${describe(value)}`);
      }
    }
  }
  if (options.region !== undefined) {
    if (!isPlainObject(options.region)) {
      fail("/region", `must be an object of dim -> [start, stop], got ${describe(options.region)}`);
    }
    for (const [dim, pair] of Object.entries(options.region)) {
      const ok =
        Array.isArray(pair) && pair.length === 2 && pair.every((x) => Number.isSafeInteger(x) && x >= 0);
      if (!ok)
        fail(`/region/${token(dim)}`, `must be [start, stop] of integers >= 0, got ${JSON.stringify(pair)}`);
    }
  }
  if (options.manifestPages !== undefined && typeof options.manifestPages !== "boolean")
    fail("/manifestPages", `must be true or false, got ${describe(options.manifestPages)}`);
  for (const name of ["schema", "writerOptions"] as const) {
    const v = options[name];
    if (v !== undefined && !isPlainObject(v)) fail(`/${name}`, `must be an object, got ${describe(v)}`);
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== "function") {
    fail("/onEvent", `must be a function, got ${describe(options.onEvent)}`);
  }
}
