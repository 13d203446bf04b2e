import {
  isV2,
  type ReadResult,
  readArrayLayout,
  readArrayRegion,
  readBlob,
  readOutputManifest,
  readRecord,
  readStatic,
} from "@zarr-stream/reader";
import {
  CONFORMANCE_DUMP_SCHEMA,
  type ConformanceDump,
  type DumpArray,
  type ExpectedBlob,
  type OutputManifest,
  SchemaError,
  type StreamDType,
} from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { littleEndianBytes, toBase64, toHex } from "./bytes.js";

/** The binding name this package writes and reads as. */
export const BINDING = "zarr-stream-ts";

export interface DumpLabels {
  /** The binding that wrote the store. */
  writer?: string;
  /** The reader producing the dump. */
  reader?: string;
}

/** The committed record indices a manifest lists, ascending. */
export function committedIndices(m: OutputManifest): number[] {
  if (isV2(m) && m.time_mode === "indexed") {
    const entries = m.records?.entries ?? [];
    return entries.flatMap((e, i) => (e.committed ? [i] : []));
  }
  return Array.from({ length: m.n_records }, (_, i) => i);
}

export function arrayDump(r: Pick<ReadResult, "data" | "shape" | "dtype">): DumpArray {
  return {
    dtype: r.dtype as StreamDType,
    shape: [...r.shape],
    data_b64: toBase64(littleEndianBytes(r.data)),
  };
}

/** A read that failed is recorded in the dump, so `check` can name the record and variable it hit. */
async function guarded(read: () => Promise<ReadResult>): Promise<DumpArray> {
  try {
    return arrayDump(await read());
  } catch (err) {
    const e = err as Error;
    return { error: `${e.name}: ${e.message}` };
  }
}

async function timeValues(store: Store, m: OutputManifest): Promise<Float64Array> {
  const layout = await readArrayLayout(store, m.time_dim);
  if (layout.dtype !== "float64" || layout.shape.length !== 1) {
    throw new SchemaError(
      `time coordinate ${m.time_dim} must be 1-D float64, is ${layout.dtype} ${JSON.stringify(layout.shape)}`,
    );
  }
  return (await readArrayRegion(store, m.time_dim, layout, [[0, layout.shape[0]!]])) as Float64Array;
}

/** output_manifest.json as plain JSON, exactly as stored (the checked fields are the stored spelling). */
async function rawManifest(store: Store): Promise<Record<string, unknown>> {
  const bytes = await store.get("output_manifest.json");
  if (bytes === undefined)
    throw new SchemaError("output_manifest.json is missing", "", "output_manifest.json");
  return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
}

/** earthsciio/write-v2-dump/v1 of everything the store has committed, read through the read-back API. */
export async function dumpStore(
  store: Store,
  caseName: string,
  labels: DumpLabels = {},
): Promise<ConformanceDump> {
  const m = await readOutputManifest(store);
  const raw = await rawManifest(store);
  const times = await timeValues(store, m);
  const indexed = isV2(m) && m.time_mode === "indexed";
  const records: ConformanceDump["records"] = [];
  for (const index of committedIndices(m)) {
    const t = times[index];
    if (t === undefined)
      throw new SchemaError(
        `record ${index} is committed but the time coordinate has ${times.length} values`,
      );
    const vars: Record<string, DumpArray> = {};
    for (const v of m.vars)
      vars[v.name] = await guarded(() => readRecord(store, v.name, index, undefined, { manifest: m }));
    const generation = indexed ? m.records?.entries[index]?.generation : undefined;
    records.push({ index, t, ...(generation === undefined ? {} : { generation }), vars });
  }
  const statics: Record<string, DumpArray> = {};
  const blobs: ExpectedBlob[] = [];
  if (isV2(m)) {
    for (const name of m.statics_committed)
      statics[name] = await guarded(() => readStatic(store, name, undefined, { manifest: m }));
    for (const b of m.blobs) {
      const scope = b.scope === "static" ? "static" : { record: b.record! };
      const bytes = await readBlob(store, scope, b.writer, b.key, { manifest: m });
      blobs.push({ scope, writer: b.writer, key: b.key, hex: toHex(bytes) });
    }
  }
  return {
    schema: CONFORMANCE_DUMP_SCHEMA,
    case: caseName,
    writer: labels.writer ?? BINDING,
    reader: labels.reader ?? BINDING,
    manifest_schema: m.schema,
    commit_seq: isV2(m) ? m.commit_seq : null,
    records,
    statics,
    blobs,
    manifest: raw,
  };
}
