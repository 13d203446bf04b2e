/**
 * Random write scenarios for the property tests, expressed as corpus cases so that the driver, the
 * oracle and the check under test are the ones the corpus uses, and a failing case prints as corpus JSON.
 */
import type {
  CaseExpectation,
  ConformanceCase,
  CorpusOp,
  CorpusSchema,
  CorpusVariable,
  Region,
  StreamDType,
} from "@zarr-stream/spec";
import fc from "fast-check";

export interface DimGen {
  len: number;
  chunk: number;
  /** shard = chunk * k */
  k: number;
}

export interface SchemaGen {
  dims: DimGen[];
  timePos: number;
  chunkT: number;
  kT: number;
  vars: { mask: number; timePos: number; dtype: StreamDType; seed: number }[];
  statics: { mask: number; dtype: StreamDType; seed: number }[];
  profile: "diagnostic" | "checkpoint" | "wasm";
  indexed: boolean;
  nRecords: number;
  /** Per-record offset within its hour: arbitrary float64 bit patterns for t. */
  offsets: number[];
}

const dtypeArb = fc.constantFrom<StreamDType>("float64", "float32", "int32", "int64", "uint8");

export const schemaGenArb: fc.Arbitrary<SchemaGen> = fc.record({
  dims: fc.array(
    fc.record({
      len: fc.integer({ min: 1, max: 8 }),
      chunk: fc.integer({ min: 1, max: 2 }),
      k: fc.integer({ min: 1, max: 2 }),
    }),
    {
      minLength: 1,
      maxLength: 3,
    },
  ),
  timePos: fc.nat(3),
  chunkT: fc.integer({ min: 1, max: 2 }),
  kT: fc.integer({ min: 1, max: 2 }),
  vars: fc.array(
    fc.record({
      mask: fc.nat(7),
      timePos: fc.nat(3),
      dtype: dtypeArb,
      seed: fc.integer({ min: -300, max: 100_000 }),
    }),
    {
      minLength: 1,
      maxLength: 2,
    },
  ),
  statics: fc.array(
    fc.record({ mask: fc.nat(7), dtype: dtypeArb, seed: fc.integer({ min: -300, max: 100_000 }) }),
    { maxLength: 1 },
  ),
  profile: fc.constantFrom<"diagnostic" | "checkpoint" | "wasm">("diagnostic", "checkpoint", "wasm"),
  indexed: fc.boolean(),
  nRecords: fc.integer({ min: 1, max: 5 }),
  offsets: fc.array(fc.double({ min: 0, max: 3599, noNaN: true, noDefaultInfinity: true }), {
    minLength: 5,
    maxLength: 5,
  }),
});

export const DIM_NAMES = ["x", "y", "z"] as const;

export function recordTime(g: SchemaGen, i: number): number {
  // Object.is(-0, ...) would make -0 a time, which schemas refuse; 0 + offset is never -0.
  return i * 3600 + (g.offsets[i % g.offsets.length] ?? 0) + 0;
}

function pick(mask: number, n: number): number[] {
  const idx = Array.from({ length: n }, (_, i) => i).filter((i) => (mask >> i) & 1);
  return idx;
}

function insertAt<T>(list: T[], pos: number, item: T): T[] {
  const p = pos % (list.length + 1);
  return [...list.slice(0, p), item, ...list.slice(p)];
}

export function buildSchema(g: SchemaGen): CorpusSchema {
  const n = g.dims.length;
  const names = DIM_NAMES.slice(0, n) as string[];
  const dims: [string, number][] = insertAt(
    g.dims.map((d, i) => [names[i]!, d.len] as [string, number]),
    g.timePos,
    ["time", g.indexed ? g.nRecords : 0],
  );
  const chunk: Record<string, number> = { time: g.chunkT };
  const shard: Record<string, number> = { time: g.chunkT * g.kT };
  g.dims.forEach((d, i) => {
    chunk[names[i]!] = d.chunk;
    shard[names[i]!] = d.chunk * d.k;
  });
  const vars: CorpusVariable[] = g.vars.map((v, j) => {
    const own = j === 0 ? names : pick(v.mask, n).map((i) => names[i]!);
    return { name: `v${j}`, dims: insertAt(own, v.timePos, "time"), dtype: v.dtype, seed: v.seed };
  });
  const statics: CorpusVariable[] = g.statics.map((s, j) => {
    const own = pick(s.mask, n).map((i) => names[i]!);
    return { name: `s${j}`, dims: own.length > 0 ? own : names, dtype: s.dtype, seed: s.seed };
  });
  return {
    dims,
    time_dim: "time",
    time_mode: g.indexed
      ? { indexed: { times: Array.from({ length: g.nRecords }, (_, i) => recordTime(g, i)) } }
      : "append",
    vars,
    statics,
    chunk_shape: chunk,
    shard_shape: shard,
    profile: g.profile,
  };
}

/**
 * Guillotine tiling of the shard grid over the region dims: each cut splits one box in two along one dim
 * at a shard boundary, so tilings are not only grids. `cuts` drives the choices; at most 16 boxes.
 */
export function guillotine(schema: CorpusSchema, regionDims: string[], cuts: number[]): Region[] {
  const shards = regionDims.map((d) => {
    const len = schema.dims.find(([n]) => n === d)![1];
    return Math.ceil(len / schema.shard_shape[d]!);
  });
  let boxes: [number, number][][] = [shards.map((s) => [0, s] as [number, number])];
  for (const x of cuts) {
    if (boxes.length >= 16) break;
    const bi = x % boxes.length;
    const box = boxes[bi]!;
    const splittable = box.flatMap(([lo, hi], d) => (hi - lo > 1 ? [d] : []));
    if (splittable.length === 0) continue;
    const d = splittable[(x >>> 4) % splittable.length]!;
    const [lo, hi] = box[d]!;
    const at = lo + 1 + ((x >>> 8) % (hi - lo - 1));
    const left = box.map((r, j) => (j === d ? ([lo, at] as [number, number]) : r));
    const right = box.map((r, j) => (j === d ? ([at, hi] as [number, number]) : r));
    boxes = [...boxes.slice(0, bi), left, right, ...boxes.slice(bi + 1)];
  }
  return boxes.map((box) => {
    const region: Region = {};
    regionDims.forEach((d, j) => {
      const len = schema.dims.find(([n]) => n === d)![1];
      const s = schema.shard_shape[d]!;
      region[d] = [box[j]![0] * s, Math.min(box[j]![1] * s, len)];
    });
    return region;
  });
}

export interface ScenarioGen {
  schema: SchemaGen;
  regionMask: number;
  cuts: number[];
  /** Records written before each flush + commit (the last commit point is always nRecords). */
  commitAfter: number[];
  /** Indexed write order, a permutation seed. */
  order: number[];
  crash: null | {
    afterCommit: number;
    garbage: number;
    flushGarbage: boolean;
    truncate: number | null;
    /** Contributors resume before the owner has persisted the truncation. */
    ownerLast: boolean;
  };
}

export const scenarioArb: fc.Arbitrary<ScenarioGen> = fc.record({
  schema: schemaGenArb,
  regionMask: fc.integer({ min: 1, max: 7 }),
  cuts: fc.array(fc.nat(), { maxLength: 24 }),
  commitAfter: fc.uniqueArray(fc.integer({ min: 1, max: 4 }), { maxLength: 3 }),
  order: fc.array(fc.nat(), { minLength: 5, maxLength: 5 }),
  crash: fc.option(
    fc.record({
      afterCommit: fc.nat(3),
      garbage: fc.nat(2),
      flushGarbage: fc.boolean(),
      truncate: fc.option(fc.nat(4)),
      ownerLast: fc.boolean(),
    }),
  ),
});

/** Record indices in write order: ascending in append mode, a permutation from `order` when indexed. */
function writeOrder(s: ScenarioGen): number[] {
  const n = s.schema.nRecords;
  const idx = Array.from({ length: n }, (_, i) => i);
  if (!s.schema.indexed) return idx;
  return idx
    .map((i) => [s.order[i] ?? 0, i] as const)
    .sort((a, b) => a[0] - b[0] || a[1] - b[1])
    .map(([, i]) => i);
}

export function commitPoints(s: ScenarioGen): number[] {
  const n = s.schema.nRecords;
  return [...new Set([...s.commitAfter.filter((c) => c < n), n])].sort((a, b) => a - b);
}

export function regionDimsOf(schema: CorpusSchema, mask: number): string[] {
  const names = schema.dims.map(([d]) => d).filter((d) => d !== "time");
  const picked = names.filter((_, i) => (mask >> i) & 1);
  return picked.length > 0 ? picked : names.slice(0, 1);
}

function isPartitioned(dims: string[], region: Region): boolean {
  return dims.some((d) => d in region);
}

/** The multi-writer case: owner + contributors over a guillotine tiling, commits, an optional crash. */
export function multiWriterCase(s: ScenarioGen): { c: ConformanceCase; writers: number } {
  const schema = buildSchema(s.schema);
  const regions = guillotine(schema, regionDimsOf(schema, s.regionMask), s.cuts);
  const names = regions.map((_, i) => `w${i}`);
  const ops: CorpusOp[] = [
    { op: "create", writer: "w0", role: { owner: regions.length }, region: regions[0]! },
  ];
  regions.slice(1).forEach((region, i) => {
    ops.push({ op: "join", writer: names[i + 1]!, role: { contributor: i + 1 }, region });
  });
  const order = writeOrder(s);
  const g = s.schema;
  const write = (pos: number, garbage: boolean) => {
    const index = order[pos]!;
    const r = garbage ? index + 100 : index;
    for (const w of names) {
      ops.push(
        g.indexed
          ? { op: "write_record_at", writer: w, index, r }
          : { op: "write_record", writer: w, t: recordTime(g, pos), r },
      );
    }
  };
  let commits = 0;
  let pos = 0;
  let tokenSeq = 0;
  const flushCommit = () => {
    const tokens = names.map((w) => {
      const token = `k${tokenSeq++}`;
      ops.push({ op: "flush", writer: w, token });
      return token;
    });
    ops.push({ op: "commit", writer: "w0", tokens });
    commits++;
  };
  const points = commitPoints(s);
  let crashed = false;
  for (let k = 0; k < points.length || pos < g.nRecords; k++) {
    const target = points[k] ?? g.nRecords;
    for (; pos < target; pos++) write(pos, false);
    if (k === 0) {
      for (const st of schema.statics) {
        for (const [i, w] of names.entries()) {
          if (i === 0 || isPartitioned(st.dims, regions[i]!))
            ops.push({ op: "write_static", writer: w, name: st.name });
        }
      }
    }
    flushCommit();
    if (s.crash && !crashed && s.crash.afterCommit % points.length === k) {
      crashed = true;
      const end = g.indexed ? Math.min(pos + s.crash.garbage, g.nRecords) : pos + s.crash.garbage;
      for (let p = pos; p < end; p++) {
        if (g.indexed) write(p, true);
        else
          for (const w of names) ops.push({ op: "write_record", writer: w, t: recordTime(g, p), r: p + 100 });
      }
      if (s.crash.flushGarbage)
        for (const w of names) ops.push({ op: "flush", writer: w, token: `garbage${tokenSeq++}` });
      for (const w of names) ops.push({ op: "drop", writer: w });
      // Append: keep the committed records with t <= at; the writers then re-emit the dropped ones.
      let at: number | null = null;
      if (!g.indexed && s.crash.truncate !== null && pos > 0) {
        const keep = s.crash.truncate % (pos + 1);
        at = keep === 0 ? -1 : recordTime(g, keep - 1);
        if (keep < pos) commits++;
        pos = keep;
      }
      const resumes: CorpusOp[] = regions.map((region, i) => ({
        op: "resume",
        writer: names[i]!,
        role: i === 0 ? { owner: regions.length } : { contributor: i },
        region,
        ...(at === null ? {} : { at }),
      }));
      ops.push(...(s.crash.ownerLast ? [...resumes.slice(1), resumes[0]!] : resumes));
    }
  }
  return {
    c: {
      name: "property",
      schema,
      ops,
      expect: expectation(schema, g, "earthsciio/output-manifest/v2", commits),
    },
    writers: regions.length,
  };
}

/** The same records written by one Single writer, flushing (= committing) at the same points. */
export function singleWriterCase(s: ScenarioGen): ConformanceCase {
  const schema = buildSchema(s.schema);
  const g = s.schema;
  const order = writeOrder(s);
  const ops: CorpusOp[] = [{ op: "create", writer: "w", role: { single: true } }];
  for (const st of schema.statics) ops.push({ op: "write_static", writer: "w", name: st.name });
  let pos = 0;
  const points = commitPoints(s);
  for (const target of points) {
    for (; pos < target; pos++) {
      const index = order[pos]!;
      ops.push(
        g.indexed
          ? { op: "write_record_at", writer: "w", index, r: index }
          : { op: "write_record", writer: "w", t: recordTime(g, pos), r: index },
      );
    }
    ops.push({ op: "flush", writer: "w" });
  }
  ops.push({ op: "close", writer: "w" });
  const v1 = !g.indexed && schema.statics.length === 0;
  return {
    name: "property-single",
    schema,
    ops,
    expect: expectation(
      schema,
      g,
      v1 ? "earthsciio/output-manifest/v1" : "earthsciio/output-manifest/v2",
      v1 ? null : points.length,
    ),
  };
}

function expectation(
  schema: CorpusSchema,
  g: SchemaGen,
  label: CaseExpectation["manifest_schema"],
  commitSeq: number | null,
): CaseExpectation {
  return {
    manifest_schema: label,
    commit_seq: commitSeq,
    records: Array.from({ length: g.nRecords }, (_, i) => ({
      index: i,
      r: i,
      ...(g.indexed ? { generation: 1 } : { t: recordTime(g, i) }),
    })),
    statics: schema.statics.map((s) => s.name).sort(),
    blobs: [],
  };
}
