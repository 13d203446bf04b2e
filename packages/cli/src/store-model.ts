import { blobObjectKey, isV2, MANIFEST_KEY, manifestPageRefs } from "@zarr-stream/reader";
import { type ArrayLayout, shardKey } from "@zarr-stream/shard";
import { manifestPageKey, type OutputManifest, type VariableSpec } from "@zarr-stream/spec";

export type ArrayKind = "time" | "coord" | "var" | "static";

/** One array the manifest implies, with what the manifest says about it. */
export interface ArrayEntry {
  name: string;
  kind: ArrayKind;
  dims: string[];
  dtype: VariableSpec["dtype"] | "float64";
  /** Statics only: listed in statics_committed. */
  committed: boolean;
}

/**
 * The store's arrays as the manifest describes them: the time coordinate, a coordinate for every
 * non-time dim that has a zarr.json (coordinates are optional), every variable and every static.
 */
export function arraysOf(m: OutputManifest, keys: ReadonlySet<string>): ArrayEntry[] {
  const out: ArrayEntry[] = [
    { name: m.time_dim, kind: "time", dims: [m.time_dim], dtype: "float64", committed: true },
  ];
  for (const d of m.dims) {
    if (d.name !== m.time_dim && keys.has(`${d.name}/zarr.json`)) {
      out.push({ name: d.name, kind: "coord", dims: [d.name], dtype: "float64", committed: true });
    }
  }
  for (const v of m.vars)
    out.push({ name: v.name, kind: "var", dims: v.dims, dtype: v.dtype, committed: true });
  if (isV2(m)) {
    for (const s of m.statics) {
      out.push({
        name: s.name,
        kind: "static",
        dims: s.dims,
        dtype: s.dtype,
        committed: m.statics_committed.includes(s.name),
      });
    }
  }
  return out;
}

export function dimLength(m: OutputManifest, dim: string): number {
  if (dim === m.time_dim) return m.n_records;
  return m.dims.find((d) => d.name === dim)?.length ?? 0;
}

/** Time-shard indices holding committed records: a prefix in append mode, any shard with one in indexed. */
export function committedTimeShards(m: OutputManifest, shardT: number): number[] {
  if (isV2(m) && m.time_mode === "indexed") {
    const set = new Set<number>();
    m.records?.entries.forEach((e, i) => {
      if (e.committed) set.add(Math.floor(i / shardT));
    });
    return [...set].sort((a, b) => a - b);
  }
  return Array.from({ length: Math.ceil(m.n_records / shardT) }, (_, i) => i);
}

function cartesian(ranges: number[][]): number[][] {
  let out: number[][] = [[]];
  for (const values of ranges) out = out.flatMap((prefix) => values.map((v) => [...prefix, v]));
  return out;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/**
 * Store keys of the shard objects that hold committed data of `a`, computed from the manifest's
 * dims and the array's shard shape. Indexed stores write the whole time coordinate at create.
 */
export function committedShardKeys(
  m: OutputManifest,
  a: ArrayEntry,
  layout: Pick<ArrayLayout, "shardShape">,
): string[] {
  if (a.kind === "static" && !a.committed) return [];
  const indexed = isV2(m) && m.time_mode === "indexed";
  const ranges = a.dims.map((d, i) => {
    const s = layout.shardShape[i]!;
    if (d === m.time_dim && !(indexed && a.kind === "time")) return committedTimeShards(m, s);
    return range(Math.ceil(dimLength(m, d) / s));
  });
  if (ranges.some((r) => r.length === 0)) return [];
  return cartesian(ranges).map((idx) => shardKey(a.name, idx));
}

/** Store keys of every committed blob. */
export function committedBlobKeys(m: OutputManifest): string[] {
  if (!isV2(m)) return [];
  return m.blobs.map((b) =>
    blobObjectKey(b.scope === "static" ? "static" : { record: b.record! }, b.writer, b.key),
  );
}

/** Store keys of the manifest pages a paged manifest read through the reader refers to. */
export function committedPageKeys(m: OutputManifest): string[] {
  return (manifestPageRefs(m) ?? []).flatMap((g) => g.refs.map((r) => manifestPageKey(g.list, r.sha256)));
}

/** Metadata keys the committed state consists of besides shard objects and blobs. */
export function metadataKeys(arrays: ArrayEntry[]): string[] {
  return [MANIFEST_KEY, "zarr.json", ...arrays.map((a) => `${a.name}/zarr.json`)];
}
