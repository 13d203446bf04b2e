import {
  isRecordCommitted,
  isV2,
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
  type StreamDType,
  type TypedArray,
  validateConformanceDump,
} from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";

export interface DumpMeta {
  case: string;
  writer: string;
}

type Dumper = (store: Store, caseName: string, labels: { writer?: string }) => Promise<ConformanceDump>;

function arrayDump(r: { dtype: string; shape: number[]; data: TypedArray }): DumpArray {
  // typed arrays are host-endian; every platform Node supports is little-endian, as the format is
  const data_b64 = Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength).toString("base64");
  return { dtype: r.dtype as StreamDType, shape: r.shape, data_b64 };
}

/** Our own earthsciio/write-v2-dump/v1, used when @zarr-stream/conformance is not in the build. */
const ownDumper: Dumper = async (store, caseName, labels) => {
  const m = await readOutputManifest(store);
  const v2 = isV2(m) ? m : undefined;
  const timeLayout = await readArrayLayout(store, m.time_dim);
  const times = await readArrayRegion(store, m.time_dim, timeLayout, [[0, timeLayout.shape[0]!]]);
  const records: ConformanceDump["records"] = [];
  for (let index = 0; index < m.n_records; index++) {
    if (!isRecordCommitted(m, index)) continue;
    const vars: Record<string, DumpArray> = {};
    for (const v of m.vars)
      vars[v.name] = arrayDump(await readRecord(store, v.name, index, undefined, { manifest: m }));
    const generation = v2?.time_mode === "indexed" ? v2.records?.entries[index]?.generation : undefined;
    records.push({
      index,
      t: Number(times[index]),
      ...(generation === undefined ? {} : { generation }),
      vars,
    });
  }
  const statics: Record<string, DumpArray> = {};
  for (const name of v2?.statics_committed ?? [])
    statics[name] = arrayDump(await readStatic(store, name, undefined, { manifest: m }));
  const blobs: ConformanceDump["blobs"] = [];
  for (const b of v2?.blobs ?? []) {
    const scope = b.scope === "static" ? "static" : { record: b.record! };
    const bytes = await readBlob(store, scope, b.writer, b.key, { manifest: m });
    blobs.push({ scope, writer: b.writer, key: b.key, hex: Buffer.from(bytes).toString("hex") });
  }
  return {
    schema: CONFORMANCE_DUMP_SCHEMA,
    case: caseName,
    writer: labels.writer ?? "zarr-stream-ts",
    reader: "zarr-stream-ts",
    manifest_schema: m.schema,
    commit_seq: v2?.commit_seq ?? null,
    records,
    statics,
    blobs,
  };
};

/** The conformance package's dumper when it is built (one implementation of the format), else ours. */
async function dumper(): Promise<Dumper> {
  const name = "@zarr-stream/conformance";
  try {
    const mod = (await import(name)) as { dumpStore?: unknown };
    if (typeof mod.dumpStore === "function") return mod.dumpStore as Dumper;
  } catch {
    // not built: fall through to our own
  }
  return ownDumper;
}

/** Every committed value of a store, read through the read-back API, as earthsciio/write-v2-dump/v1. */
export async function dumpStore(store: Store, meta: DumpMeta): Promise<ConformanceDump> {
  const dump = await (await dumper())(store, meta.case, { writer: meta.writer });
  return validateConformanceDump(dump);
}

export { ownDumper as dumpStoreStandalone };
