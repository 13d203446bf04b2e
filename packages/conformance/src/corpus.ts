import { readFile } from "node:fs/promises";
import {
  type ConformanceCase,
  type ConformanceCorpus,
  type CorpusRole,
  type CorpusSchema,
  type Role,
  SchemaError,
  type StreamSchema,
  validateConformanceCorpus,
  validateStreamSchema,
} from "@zarr-stream/spec";

/** The case's schema without the generator seeds: what the writer is given. */
export function streamSchemaOf(schema: CorpusSchema): StreamSchema {
  const strip = ({ seed: _seed, ...v }: CorpusSchema["vars"][number]) => v;
  return { ...structuredClone(schema), vars: schema.vars.map(strip), statics: schema.statics.map(strip) };
}

export function roleOf(role: CorpusRole): Role {
  if ("single" in role) return { kind: "single" };
  if ("owner" in role) return { kind: "owner", nWriters: role.owner };
  return { kind: "contributor", id: role.contributor };
}

/** Record times of an indexed case, or undefined in append mode. */
export function indexedTimes(schema: CorpusSchema): number[] | undefined {
  return schema.time_mode === "append" ? undefined : schema.time_mode.indexed.times;
}

function fail(c: string, pointer: string, reason: string): never {
  const at = `/cases/${c}${pointer}`;
  throw new SchemaError(
    `earthsciio/write-conformance-spec/v2: ${at}: ${reason}`,
    at,
    "earthsciio/write-conformance-spec/v2",
  );
}

/** What the JSON Schema cannot say: the oracle must be computable from `expect` alone. */
function checkCase(c: ConformanceCase): void {
  try {
    validateStreamSchema(streamSchemaOf(c.schema));
  } catch (err) {
    fail(c.name, "/schema", (err as Error).message);
  }
  const times = indexedTimes(c.schema);
  const seen = new Set<number>();
  c.expect.records.forEach((r, i) => {
    if (seen.has(r.index)) fail(c.name, `/expect/records/${i}`, `record ${r.index} listed twice`);
    seen.add(r.index);
    if (times === undefined && r.t === undefined)
      fail(c.name, `/expect/records/${i}`, "an append case must give t");
    if (times !== undefined && r.index >= times.length) {
      fail(c.name, `/expect/records/${i}`, `index ${r.index} is outside the ${times.length} indexed records`);
    }
  });
  const varNames = new Set(c.schema.vars.map((v) => v.name));
  c.ops.forEach((op, i) => {
    if ("vars" in op && op.vars) {
      for (const v of op.vars) if (!varNames.has(v)) fail(c.name, `/ops/${i}/vars`, `unknown variable ${v}`);
    }
    if (op.op === "write_static" && !c.schema.statics.some((x) => x.name === op.name)) {
      fail(c.name, `/ops/${i}/name`, `unknown static ${op.name}`);
    }
  });
  c.expect.statics.forEach((s, i) => {
    if (!c.schema.statics.some((x) => x.name === s))
      fail(c.name, `/expect/statics/${i}`, `unknown static ${s}`);
  });
}

/** Validates a parsed corpus document: the JSON Schema, unique case names, then each case's semantics. */
export function parseCorpus(document: unknown): ConformanceCorpus {
  const corpus = validateConformanceCorpus(document);
  const names = new Set<string>();
  for (const c of corpus.cases) {
    if (names.has(c.name)) fail(c.name, "", "duplicate case name");
    names.add(c.name);
    checkCase(c);
  }
  return corpus;
}

export async function loadCorpus(path: string): Promise<ConformanceCorpus> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new SchemaError(`corpus ${path}: cannot read (${(err as Error).message})`, "", path);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (err) {
    throw new SchemaError(`corpus ${path}: not JSON (${(err as Error).message})`, "", path);
  }
  return parseCorpus(document);
}

export function findCase(corpus: ConformanceCorpus, name: string): ConformanceCase {
  const c = corpus.cases.find((x) => x.name === name);
  if (!c)
    throw new SchemaError(
      `corpus has no case ${JSON.stringify(name)}`,
      "/cases",
      "earthsciio/write-conformance-spec/v2",
    );
  return c;
}

/** The corpus shipped with this package (corpus/write_spec_v2.json). */
export const BUNDLED_CORPUS = new URL("../../corpus/write_spec_v2.json", import.meta.url).pathname;
