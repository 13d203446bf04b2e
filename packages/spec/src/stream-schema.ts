import * as precompiled from "#precompiled-validators";
import { SchemaError } from "./errors.js";
import { caseFolded, nodeNameProblem } from "./node-names.js";
import { streamSchemaJsonSchema } from "./schemas/stream-schema.js";
import type { StreamSchema, VariableSpec } from "./types.js";
import { makeValidator, pointerToken } from "./validate.js";

const DOCUMENT = "stream schema";
const checkShape = /* @__PURE__ */ makeValidator<StreamSchema>(
  streamSchemaJsonSchema,
  DOCUMENT,
  precompiled.streamSchema,
);

function fail(pointer: string, reason: string, documentName: string): never {
  throw new SchemaError(`${documentName}: ${pointer}: ${reason}`, pointer, documentName);
}

function checkShapes(schema: StreamSchema, dimNames: Set<string>, doc: string): void {
  for (const key of ["chunk_shape", "shard_shape"] as const) {
    for (const dim of Object.keys(schema[key])) {
      if (!dimNames.has(dim)) fail(`/${key}/${pointerToken(dim)}`, `"${dim}" is not a dim`, doc);
    }
    for (const dim of dimNames) {
      if (schema[key][dim] === undefined) fail(`/${key}`, `no size for dim "${dim}"`, doc);
    }
  }
  for (const dim of dimNames) {
    const chunk = schema.chunk_shape[dim]!;
    const shard = schema.shard_shape[dim]!;
    if (shard % chunk !== 0) {
      fail(
        `/shard_shape/${pointerToken(dim)}`,
        `shard ${shard} of "${dim}" is not a multiple of chunk ${chunk}`,
        doc,
      );
    }
  }
}

function checkVariables(schema: StreamSchema, dimNames: Set<string>, doc: string): void {
  const seen = new Set<string>();
  const lists: ["vars" | "statics", VariableSpec[]][] = [
    ["vars", schema.vars],
    ["statics", schema.statics],
  ];
  for (const [list, specs] of lists) {
    specs.forEach((v, i) => {
      const at = `/${list}/${i}`;
      if (dimNames.has(v.name))
        fail(`${at}/name`, `"${v.name}" is a dim name (coordinate arrays use those)`, doc);
      if (seen.has(v.name)) fail(`${at}/name`, `"${v.name}" is not unique across vars and statics`, doc);
      seen.add(v.name);
      const own = new Set<string>();
      v.dims.forEach((d, j) => {
        if (!dimNames.has(d)) fail(`${at}/dims/${j}`, `unknown dim "${d}"`, doc);
        if (own.has(d)) fail(`${at}/dims/${j}`, `dim "${d}" repeated`, doc);
        own.add(d);
        if (list === "statics" && d === schema.time_dim)
          fail(`${at}/dims/${j}`, "a static has no time dim", doc);
      });
      if (list === "vars" && !own.has(schema.time_dim)) {
        fail(`${at}/dims`, `a streaming variable needs the time dim "${schema.time_dim}"`, doc);
      }
    });
  }
}

function checkTimes(schema: StreamSchema, doc: string): void {
  if (schema.time_mode === "append") return;
  const times = schema.time_mode.indexed.times;
  times.forEach((t, i) => {
    const at = `/time_mode/indexed/times/${i}`;
    if (!Number.isFinite(t) || Object.is(t, -0)) fail(at, `${t} is not a finite time (or is -0)`, doc);
    if (i > 0 && !(t > times[i - 1]!)) fail(at, "times must be strictly increasing", doc);
  });
}

function checkCoords(schema: StreamSchema, dims: Map<string, number>, doc: string): void {
  for (const [dim, coord] of Object.entries(schema.coords ?? {})) {
    const at = `/coords/${pointerToken(dim)}`;
    const length = dims.get(dim);
    if (length === undefined) fail(at, `"${dim}" is not a dim`, doc);
    if (dim === schema.time_dim) {
      if (coord.values !== undefined)
        fail(`${at}/values`, "the time coordinate's values are the record times", doc);
    } else if (coord.values !== undefined && coord.values.length !== length) {
      fail(`${at}/values`, `${coord.values.length} values for dim length ${length}`, doc);
    }
  }
}

/**
 * Every dim, variable and static name can be a store key segment on every backend, and no two of them
 * differ only by case (a case-insensitive file system would hold them in one folder).
 */
function checkNodeNames(schema: StreamSchema, doc: string): void {
  const folded = new Map<string, string>();
  const named: [string, string][] = [
    ...schema.dims.map(([name], i) => [`/dims/${i}/0`, name] as [string, string]),
    ...schema.vars.map((v, i) => [`/vars/${i}/name`, v.name] as [string, string]),
    ...schema.statics.map((v, i) => [`/statics/${i}/name`, v.name] as [string, string]),
  ];
  for (const [pointer, name] of named) {
    const problem = nodeNameProblem(name);
    if (problem !== undefined) fail(pointer, `name ${JSON.stringify(name)} ${problem}`, doc);
    const other = folded.get(caseFolded(name));
    if (other !== undefined && other !== name)
      fail(pointer, `name ${JSON.stringify(name)} differs from ${JSON.stringify(other)} only by case`, doc);
    folded.set(caseFolded(name), name);
  }
}

/** The semantic rules of seed §3 beyond JSON Schema, on an already shape-checked schema. */
export function checkStreamSchemaSemantics(schema: StreamSchema, doc = DOCUMENT): StreamSchema {
  const dims = new Map<string, number>();
  schema.dims.forEach(([name, length], i) => {
    if (dims.has(name)) fail(`/dims/${i}/0`, `dim "${name}" repeated`, doc);
    dims.set(name, length);
  });
  if (!dims.has(schema.time_dim)) fail("/time_dim", `"${schema.time_dim}" is not a dim`, doc);
  const dimNames = new Set(dims.keys());
  checkShapes(schema, dimNames, doc);
  checkVariables(schema, dimNames, doc);
  checkTimes(schema, doc);
  checkCoords(schema, dims, doc);
  return schema;
}

/**
 * A StreamSchema from untrusted input: JSON Schema shape, then seed §3 semantics (time dim present and
 * used exactly once by every var, never by a static; every dim sized in chunk and shard shape with
 * chunk dividing shard; unique names distinct from dims; indexed times finite and strictly increasing;
 * coords only for known dims), and names every backend can hold as a key segment (node-names.ts). Throws
 * SchemaError with the JSON pointer that failed. A schema rebuilt from a manifest skips the name rules: a
 * store other software wrote is read as it is.
 */
export function validateStreamSchema(value: unknown): StreamSchema {
  const schema = checkStreamSchemaSemantics(checkShape(value));
  checkNodeNames(schema, DOCUMENT);
  return schema;
}

/**
 * A schema written in code, typed and checked where it is written: TypeScript reads the literal as a
 * StreamSchema (`dims` as `[string, number][]`, `time_mode` and `profile` as their literal types) where a
 * bare object literal would widen `dims` to `(string | number)[][]`, and validateStreamSchema's checks
 * throw their SchemaError here rather than at the first ZarrStreamWriter.create. Returns `schema` itself.
 */
export function defineSchema<S extends StreamSchema>(schema: S): S {
  validateStreamSchema(schema);
  return schema;
}
