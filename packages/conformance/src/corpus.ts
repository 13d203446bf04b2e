import { readFile } from "node:fs/promises";
import {
  type ConformanceCase,
  type ConformanceCorpus,
  type CorpusRole,
  type CorpusSchema,
  type ExpectedRecord,
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

/**
 * The t each generator record r is written with by the case's write_record ops that must succeed (an op
 * with expect_error is refused, so its t never reaches the store).
 */
function appendTimesByRecord(c: ConformanceCase): Map<number, Set<number>> {
  const byR = new Map<number, Set<number>>();
  for (const op of c.ops) {
    if (op.op !== "write_record" || op.expect_error !== undefined) continue;
    const set = byR.get(op.r) ?? new Set<number>();
    set.add(op.t);
    byR.set(op.r, set);
  }
  return byR;
}

/**
 * The t of an expected record. Indexed mode: times[index]. Append mode: the record's own `t` when the case
 * gives it, else the t of the write_record ops that write its generator record r (seed §10 lists only the
 * index and r; the ops already carry t). parseCorpus has checked that this is defined and unambiguous.
 */
export function expectedTime(c: ConformanceCase, rec: ExpectedRecord): number {
  const times = indexedTimes(c.schema);
  if (times !== undefined) return times[rec.index]!;
  if (rec.t !== undefined) return rec.t;
  const written = appendTimesByRecord(c).get(rec.r);
  return written !== undefined && written.size === 1 ? [...written][0]! : Number.NaN;
}

function fail(c: string, pointer: string, reason: string): never {
  const at = `/cases/${c}${pointer}`;
  throw new SchemaError(
    `earthsciio/write-conformance-spec/v2: ${at}: ${reason}`,
    at,
    "earthsciio/write-conformance-spec/v2",
  );
}

/** Bitwise, so that -0 and 0 differ as they do in a dump. */
function sameFloat(a: number, b: number): boolean {
  return Object.is(a, b);
}

/** An append record's t: derived from the ops when absent (and then unambiguous), equal to them when given. */
function checkAppendTime(
  c: ConformanceCase,
  rec: ExpectedRecord,
  i: number,
  byR: Map<number, Set<number>>,
): void {
  const written = [...(byR.get(rec.r) ?? [])];
  const at = `/expect/records/${i}`;
  if (rec.t === undefined) {
    if (written.length === 0)
      fail(c.name, at, `no write_record op writes generator record ${rec.r}, so the case must give t`);
    if (written.length > 1) {
      fail(c.name, at, `write_record ops write generator record ${rec.r} at t ${written.join(", ")}: give t`);
    }
    return;
  }
  if (written.length > 0 && !written.some((t) => sameFloat(t, rec.t!))) {
    fail(
      c.name,
      `${at}/t`,
      `t ${rec.t} is not a t that write_record ops write generator record ${rec.r} with`,
    );
  }
}

/** What the JSON Schema cannot say: the oracle must be computable from `expect` alone. */
function checkCase(c: ConformanceCase): void {
  try {
    validateStreamSchema(streamSchemaOf(c.schema));
  } catch (err) {
    fail(c.name, "/schema", (err as Error).message);
  }
  const times = indexedTimes(c.schema);
  const byR = appendTimesByRecord(c);
  const seen = new Set<number>();
  c.expect.records.forEach((r, i) => {
    if (seen.has(r.index)) fail(c.name, `/expect/records/${i}`, `record ${r.index} listed twice`);
    seen.add(r.index);
    if (times === undefined) checkAppendTime(c, r, i, byR);
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
