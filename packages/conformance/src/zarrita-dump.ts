import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  CONFORMANCE_DUMP_SCHEMA,
  type ConformanceDump,
  type DumpArray,
  type ExpectedBlob,
  SchemaError,
  type StreamDType,
  type TypedArray,
} from "@zarr-stream/spec";
import FileSystemStore from "@zarrita/storage/fs";
import * as zarr from "zarrita";
import { littleEndianBytes, toBase64, toHex } from "./bytes.js";
import { BINDING, type DumpLabels } from "./dump.js";

/** The manifest fields this reader needs, read as plain JSON: it must not lean on our reader. */
interface ManifestView {
  schema: string;
  time_dim: string;
  n_records: number;
  time_mode?: string;
  commit_seq?: number;
  vars: { name: string; dims: string[]; dtype: string }[];
  statics_committed?: string[];
  records?: { entries: RecordEntry[]; pages?: PageRef[]; page_index?: PageRef[] };
  blobs?: { scope: "static" | "record"; record?: number; writer: number; key: string }[];
}

interface RecordEntry {
  committed: boolean;
  generation: number;
}

interface PageRef {
  first: number;
  count: number;
  sha256: string;
}

const V1 = "earthsciio/output-manifest/v1";
const PAGED = "zarr-stream/output-manifest/v2-paged";

/**
 * A paged list's entries, page by page, each checked against its ref (docs/manifest-pages.md: pages are
 * content-addressed under .zarr-stream/manifest/<list>/<sha256>.json). Plain file reads and JSON, like
 * the rest of this reader, so a page our reader misreads cannot be misread the same way here.
 */
async function pagedEntries<T>(root: string, list: string, refs: PageRef[]): Promise<T[]> {
  const out: T[] = [];
  for (const ref of refs) {
    const path = join(root, ".zarr-stream", "manifest", list, `${ref.sha256}.json`);
    const bytes = await readFile(path);
    const page = JSON.parse(bytes.toString("utf8")) as T[];
    if (createHash("sha256").update(bytes).digest("hex") !== ref.sha256 || ref.first !== out.length)
      throw new SchemaError(`${path}: not the page its ref names`, "", path);
    if (!Array.isArray(page) || page.length !== ref.count)
      throw new SchemaError(`${path}: expected ${ref.count} entries`, "", path);
    out.push(...page);
  }
  return out;
}

/**
 * output_manifest.json as plain JSON; in the paged form (its own label) with the record entries of an
 * indexed store resolved from their pages, the only paged list this reader needs (append mode takes
 * n_records, which stays in the head).
 */
async function readManifest(root: string): Promise<{ m: ManifestView; entries: RecordEntry[] }> {
  const path = join(root, "output_manifest.json");
  const m = JSON.parse(await readFile(path, "utf8")) as ManifestView;
  if (m.schema !== V1 && m.schema !== "earthsciio/output-manifest/v2" && m.schema !== PAGED) {
    throw new SchemaError(`${path}: unknown manifest label ${JSON.stringify(m.schema)}`, "/schema", path);
  }
  const records = m.records;
  if (m.schema !== PAGED || records === undefined) return { m, entries: records?.entries ?? [] };
  const pages =
    records.page_index !== undefined
      ? await pagedEntries<PageRef>(root, "record_pages", records.page_index)
      : (records.pages ?? []);
  return { m, entries: [...(await pagedEntries<RecordEntry>(root, "records", pages)), ...records.entries] };
}

function toDump(data: TypedArray, shape: number[], dtype: string): DumpArray {
  return { dtype: dtype as StreamDType, shape, data_b64: toBase64(littleEndianBytes(data)) };
}

async function guarded(read: () => Promise<DumpArray>): Promise<DumpArray> {
  try {
    return await read();
  } catch (err) {
    const e = err as Error;
    return { error: `${e.name}: ${e.message}` };
  }
}

/**
 * earthsciio/write-v2-dump/v1 of a store directory read with zarrita (an independent Zarr v3
 * implementation): the manifest as plain JSON for what is committed, every array through zarrita.
 */
export async function dumpWithZarrita(
  root: string,
  caseName: string,
  labels: DumpLabels = {},
): Promise<ConformanceDump> {
  const { m, entries } = await readManifest(root);
  const store = new FileSystemStore(root);
  const group = zarr.root(store);
  const timeArray = await zarr.open(group.resolve(m.time_dim), { kind: "array" });
  const time = (await zarr.get(timeArray)).data as Float64Array;
  const indexed = m.schema !== V1 && m.time_mode === "indexed";
  const indices = indexed
    ? entries.flatMap((e, i) => (e.committed ? [i] : []))
    : Array.from({ length: m.n_records }, (_, i) => i);
  const arrays = new Map<string, zarr.Array<zarr.DataType, FileSystemStore>>();
  for (const v of m.vars) arrays.set(v.name, await zarr.open.v3(group.resolve(v.name), { kind: "array" }));
  const records: ConformanceDump["records"] = [];
  for (const index of indices) {
    const vars: Record<string, DumpArray> = {};
    for (const v of m.vars) {
      vars[v.name] = await guarded(async () => {
        const arr = arrays.get(v.name)!;
        const axis = v.dims.indexOf(m.time_dim);
        const sel = v.dims.map((_, d) => (d === axis ? zarr.slice(index, index + 1) : null));
        const chunk = await zarr.get(arr, sel);
        return toDump(
          chunk.data as TypedArray,
          chunk.shape.filter((_, d) => d !== axis),
          v.dtype,
        );
      });
    }
    const generation = indexed ? entries[index]?.generation : undefined;
    records.push({ index, t: time[index]!, ...(generation === undefined ? {} : { generation }), vars });
  }
  const statics: Record<string, DumpArray> = {};
  for (const name of m.statics_committed ?? []) {
    statics[name] = await guarded(async () => {
      const arr = await zarr.open.v3(group.resolve(name), { kind: "array" });
      if (!(arr instanceof zarr.Array)) throw new SchemaError(`${name} is not an array`);
      const chunk = await zarr.get(arr);
      return toDump(chunk.data as TypedArray, chunk.shape, arr.dtype);
    });
  }
  const blobs: ExpectedBlob[] = [];
  for (const b of m.blobs ?? []) {
    const key =
      b.scope === "static"
        ? `blobs/static/${b.writer}/${b.key}`
        : `blobs/record/${b.record}/${b.writer}/${b.key}`;
    const scope = b.scope === "static" ? "static" : { record: b.record! };
    blobs.push({ scope, writer: b.writer, key: b.key, hex: toHex(await readFile(join(root, key))) });
  }
  return {
    schema: CONFORMANCE_DUMP_SCHEMA,
    case: caseName,
    writer: labels.writer ?? BINDING,
    reader: labels.reader ?? "zarrita",
    manifest_schema: m.schema,
    commit_seq: m.commit_seq ?? null,
    records,
    statics,
    blobs,
    manifest: m as unknown as Record<string, unknown>,
  };
}
