import type { ZarrArray } from "@zarr-stream/shard";
import {
  type BlobScope,
  type DType,
  NotCommitted,
  type OutputManifest,
  type Region,
  SchemaError,
  StoreError,
  type TypedArray,
  type VariableSpec,
} from "@zarr-stream/spec";
import type { ReadableStore } from "@zarr-stream/store";
import { checkOut, openArray, readArrayRegion } from "./array-region.js";
import { arrayCovering, type RecordSnapshot, recordSnapshot } from "./committed-snapshot.js";
import { isRecordCommitted, isV2, readOutputManifest } from "./manifest.js";

export { isRecordCommitted };

export interface ReadResult {
  data: TypedArray;
  /** Shape of `data`: the variable's dims minus the time dim, region-sized. */
  shape: number[];
  dims: string[];
  dtype: DType;
}

/** Options of readRecord, readStatic and readBlob. */
export interface ReadOptions {
  /**
   * The manifest to check against instead of the store's current one (which is otherwise read, or taken
   * from this store handle's cache when its version is unchanged).
   */
  manifest?: OutputManifest;
  /**
   * readRecord and readStatic: the caller's buffer for `data`, a typed array of the variable's dtype
   * holding exactly the region's element count. Every element is written, so a loop over records with one
   * `out` allocates no result per record. Checked before any data is read (SchemaError at /out).
   */
  out?: TypedArray;
}

function dimLengths(m: OutputManifest): Map<string, number> {
  return new Map(m.dims.map((d) => [d.name, d.length]));
}

/** Per-dim [start, stop) of `dims` under `region`; region dims a variable lacks are ignored. */
function selectionFor(m: OutputManifest, dims: string[], region: Region | undefined, what: string) {
  const lengths = dimLengths(m);
  for (const [d, r] of Object.entries(region ?? {})) {
    const len = lengths.get(d);
    if (len === undefined || d === m.time_dim) {
      throw new SchemaError(
        `${what}: region names ${JSON.stringify(d)}, which is not a non-time dim of the store`,
        `/${d}`,
      );
    }
    if (
      !Array.isArray(r) ||
      r.length !== 2 ||
      !r.every(Number.isInteger) ||
      !(0 <= r[0] && r[0] < r[1] && r[1] <= len)
    ) {
      throw new SchemaError(
        `${what}: region ${d}=${JSON.stringify(r)} is not [start, stop) within [0, ${len}]`,
        `/${d}`,
      );
    }
  }
  return dims.map((d) =>
    region?.[d] ? ([...region[d]] as [number, number]) : ([0, lengths.get(d)!] as [number, number]),
  );
}

function findVariable(list: VariableSpec[], name: string, kind: string): VariableSpec {
  const v = list.find((x) => x.name === name);
  if (!v)
    throw new SchemaError(
      `no ${kind} named ${JSON.stringify(name)} (have: ${list.map((x) => x.name).join(", ")})`,
    );
  return v;
}

function elements(sel: [number, number][]): number {
  return sel.reduce((p, [a, b]) => p * (b - a), 1);
}

/** Seed §7: the region of committed record `index` of `variable`. NotCommitted otherwise. */
export async function readRecord(
  store: ReadableStore,
  variable: string,
  index: number,
  region?: Region,
  opts: ReadOptions = {},
): Promise<ReadResult> {
  if (!Number.isInteger(index) || index < 0)
    throw new SchemaError(`record index ${index} is not a non-negative integer`);
  // Without a manifest given, zarr.json is read alongside the manifest's head, so on a cold cache the two
  // reads overlap; with one, the variable is checked first.
  let early: Promise<ZarrArray> | undefined;
  let snapshot: RecordSnapshot;
  if (opts.manifest === undefined) {
    early = openArray(store, variable);
    early.catch(() => {});
    snapshot = await recordSnapshot(store, index);
  } else {
    snapshot = { manifest: opts.manifest, committed: isRecordCommitted(opts.manifest, index) };
  }
  const m = snapshot.manifest;
  const v = findVariable(m.vars, variable, "variable");
  if (!snapshot.committed) throw new NotCommitted(`record ${index} of ${store.url} is not committed`);
  const sel = selectionFor(m, v.dims, region, `readRecord(${variable})`);
  const tAxis = v.dims.indexOf(m.time_dim);
  sel[tAxis] = [index, index + 1];
  const what = `readRecord(${variable})`;
  if (opts.out !== undefined) checkOut(what, v.dtype, elements(sel), opts.out);
  const array = await arrayCovering(store, variable, early ?? openArray(store, variable), sel);
  const data = await readArrayRegion(store, variable, array, sel, { out: opts.out });
  const keep = v.dims.map((_, i) => i).filter((i) => i !== tAxis);
  return {
    data,
    shape: keep.map((i) => sel[i]![1] - sel[i]![0]),
    dims: keep.map((i) => v.dims[i]!),
    dtype: v.dtype,
  };
}

/** Seed §7: the region of a committed static. NotCommitted otherwise. */
export async function readStatic(
  store: ReadableStore,
  name: string,
  region?: Region,
  opts: ReadOptions = {},
): Promise<ReadResult> {
  const m = opts.manifest ?? (await readOutputManifest(store));
  if (!isV2(m)) throw new NotCommitted(`static ${name}: ${store.url} is a v1 store, which has no statics`);
  const v = findVariable(m.statics, name, "static");
  if (!m.statics_committed.includes(name))
    throw new NotCommitted(`static ${name} of ${store.url} is not committed`);
  const sel = selectionFor(m, v.dims, region, `readStatic(${name})`);
  if (opts.out !== undefined) checkOut(`readStatic(${name})`, v.dtype, elements(sel), opts.out);
  const array = await openArray(store, name);
  const data = await readArrayRegion(store, name, array, sel, { out: opts.out });
  return { data, shape: sel.map(([a, b]) => b - a), dims: [...v.dims], dtype: v.dtype };
}

export const BLOB_KEY_PATTERN = /^[A-Za-z0-9._-]+$/;

/** Seed §7: a blob key matches [A-Za-z0-9._-]+ and is not "." or "..". */
export function checkBlobKey(key: string): void {
  if (typeof key !== "string" || !BLOB_KEY_PATTERN.test(key) || key === "." || key === "..") {
    throw new SchemaError(
      `blob key ${JSON.stringify(key)} must match [A-Za-z0-9._-]+ and not be "." or ".."`,
    );
  }
}

export function blobObjectKey(scope: BlobScope, writer: number, key: string): string {
  checkBlobKey(key);
  if (scope === "static") return `blobs/static/${writer}/${key}`;
  return `blobs/record/${scope.record}/${writer}/${key}`;
}

/** Seed §7: a committed blob's bytes. NotCommitted otherwise. */
export async function readBlob(
  store: ReadableStore,
  scope: BlobScope,
  writer: number,
  key: string,
  opts: ReadOptions = {},
): Promise<Uint8Array> {
  const objectKey = blobObjectKey(scope, writer, key);
  const m = opts.manifest ?? (await readOutputManifest(store));
  const committed =
    isV2(m) &&
    m.blobs.some(
      (b) =>
        b.writer === writer &&
        b.key === key &&
        (scope === "static" ? b.scope === "static" : b.scope === "record" && b.record === scope.record),
    );
  if (!committed) throw new NotCommitted(`blob ${objectKey} of ${store.url} is not committed`);
  const bytes = await store.get(objectKey);
  if (bytes === undefined)
    throw new StoreError(`committed blob ${objectKey} is missing from ${store.url}`, objectKey);
  return bytes;
}
