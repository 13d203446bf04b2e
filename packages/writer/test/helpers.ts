import { readOutputManifest, readOutputManifestIfPresent, readRecord, readStatic } from "@zarr-stream/reader";
import {
  fillGenerated,
  type Region,
  type Role,
  type StreamDType,
  type StreamSchema,
  type TypedArray,
} from "@zarr-stream/spec";
import { type FencingStore, MemoryStore, type Store, snapshotStore } from "@zarr-stream/store";
import { leaseKey, ZarrStreamWriter } from "../src/index.js";

/** time x lat 4 x lon 6, shards {time 2, lat 2, lon 6} (or lon 3 when splitLon), chunks {1, 1, 3}. */
export function gridSchema(over: Partial<StreamSchema> = {}, splitLon = false): StreamSchema {
  return {
    dims: [
      ["time", 0],
      ["lat", 4],
      ["lon", 6],
    ],
    time_dim: "time",
    time_mode: "append",
    vars: [
      { name: "temperature", dims: ["time", "lat", "lon"], dtype: "float64", attrs: { units: "K" } },
      { name: "zonal", dims: ["time", "lon"], dtype: "float32" },
      { name: "total", dims: ["time"], dtype: "int64" },
    ],
    statics: [],
    chunk_shape: { time: 1, lat: 1, lon: 3 },
    shard_shape: { time: 2, lat: 2, lon: splitLon ? 3 : 6 },
    profile: "diagnostic",
    coords: {
      lat: { values: [0, 1, 2, 3], attrs: { units: "degrees_north" } },
      time: { attrs: { units: "s" } },
    },
    attrs: { title: "test" },
    ...over,
  };
}

export const SEEDS: Record<string, number> = {
  temperature: 1000,
  zonal: 2000,
  total: 3000,
  area: 7,
  mask: 11,
};

/** Seed §10 generator values of record r for every variable the writer supplies, over its region. */
export function recordArrays(
  schema: StreamSchema,
  r: number,
  region: Region,
  include: (name: string, partitioned: boolean) => boolean = () => true,
): Record<string, Exclude<TypedArray, Uint32Array | BigUint64Array>> {
  const out: Record<string, Exclude<TypedArray, Uint32Array | BigUint64Array>> = {};
  const regionDims = Object.keys(region);
  for (const v of schema.vars) {
    const dims = v.dims.filter((d) => d !== schema.time_dim);
    const partitioned = dims.some((d) => regionDims.includes(d));
    if (!include(v.name, partitioned)) continue;
    out[v.name] = fillGenerated(v.dtype, SEEDS[v.name] ?? 1, r, dims, boxOf(schema, dims, region));
  }
  return out;
}

export function boxOf(
  schema: StreamSchema,
  dims: string[],
  region: Region,
): Record<string, [number, number]> {
  const box: Record<string, [number, number]> = {};
  for (const d of dims) box[d] = region[d] ?? [0, schema.dims.find(([n]) => n === d)![1]];
  return box;
}

export function staticArray(schema: StreamSchema, name: string, region: Region) {
  const s = schema.statics.find((x) => x.name === name)!;
  return fillGenerated(s.dtype as StreamDType, SEEDS[name] ?? 1, 0, s.dims, boxOf(schema, s.dims, region));
}

/** Every committed value of the store, read through the read-back API, as comparable JSON-ish text. */
export async function committedDump(store: Store): Promise<string> {
  const m = await readOutputManifest(store);
  const out: unknown[] = [m.schema, m.n_records];
  const indexed = m.schema === "earthsciio/output-manifest/v2" && m.time_mode === "indexed";
  for (let i = 0; i < m.n_records; i++) {
    if (indexed && !(m as { records?: { entries: { committed: boolean }[] } }).records?.entries[i]?.committed)
      continue;
    for (const v of m.vars) {
      const r = await readRecord(store, v.name, i, undefined, { manifest: m });
      out.push([i, v.name, r.shape, Array.from(r.data as ArrayLike<number | bigint>, String)]);
    }
  }
  if (m.schema === "earthsciio/output-manifest/v2") {
    for (const s of m.statics_committed) {
      const r = await readStatic(store, s, undefined, { manifest: m });
      out.push([s, Array.from(r.data as ArrayLike<number | bigint>, String)]);
    }
  }
  return JSON.stringify(out);
}

export async function bytesOf(store: Store): Promise<Map<string, string>> {
  const snap = await snapshotStore(store);
  return new Map([...snap].map(([k, v]) => [k, Buffer.from(v).toString("hex")]));
}

/** An owner of two writers on lat [0, 2] and contributor 1 joined on lat [2, 4]: the tests' split store. */
export async function ownerAndContributor(
  store: Store,
  schema: StreamSchema,
): Promise<{ owner: ZarrStreamWriter; c: ZarrStreamWriter }> {
  const owner = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 2 }, { lat: [0, 2] });
  const c = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, { lat: [2, 4] });
  return { owner, c };
}

export function newStore(): MemoryStore {
  return new MemoryStore();
}

export type Arrays = ReturnType<typeof recordArrays>;
export type { StreamDType };

/** The indices of the records the store's manifest commits. */
export async function committedIndices(store: FencingStore): Promise<Set<number>> {
  const m = await readOutputManifestIfPresent(store);
  if (m === undefined) return new Set();
  const entries = (m as { records?: { entries: { committed: boolean }[] } }).records?.entries;
  if (entries) return new Set(entries.flatMap((e, i) => (e.committed ? [i] : [])));
  return new Set(Array.from({ length: m.n_records }, (_, i) => i));
}

/** Every committed record, read back, by index: what a reader sees. */
export async function committedRecords(store: FencingStore): Promise<Map<number, string>> {
  const m = await readOutputManifestIfPresent(store);
  const out = new Map<number, string>();
  if (m === undefined) return out;
  for (const i of await committedIndices(store)) {
    const values: string[] = [];
    for (const v of m.vars) {
      const r = await readRecord(store, v.name, i, undefined, { manifest: m });
      values.push(Array.from(r.data as ArrayLike<number | bigint>, String).join(","));
    }
    out.set(i, values.join("|"));
  }
  return out;
}

/**
 * Opens the store a create cut short by a fault was making: resumed when the create got as far as the root
 * zarr.json or the lease, else created again. `probe` answers whether it did (the unfaulted store).
 */
export async function resumeOrCreate(
  store: FencingStore,
  schema: StreamSchema,
  role: Role,
  region: Region,
  probe: FencingStore = store,
): Promise<ZarrStreamWriter> {
  const started =
    (await probe.size("zarr.json")) !== undefined || (await probe.size(leaseKey(0))) !== undefined;
  return started
    ? ZarrStreamWriter.resume(store, role, region, undefined, { schema })
    : ZarrStreamWriter.create(store, schema, role, region);
}
