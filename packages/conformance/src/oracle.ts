import {
  CONFORMANCE_DUMP_SCHEMA,
  type ConformanceCase,
  type ConformanceDump,
  type DumpArray,
  type ExpectedBlob,
} from "@zarr-stream/spec";
import { littleEndianBytes, toBase64 } from "./bytes.js";
import { expectedTime } from "./corpus.js";
import { dimLength, dimsNoTime, generated } from "./generate.js";

/** Blob order of the manifest: scope ("record" < "static"), record, writer, key. */
export function compareDumpBlobs(a: ExpectedBlob, b: ExpectedBlob): number {
  const rank = (x: ExpectedBlob) => (x.scope === "static" ? [1, -1] : [0, x.scope.record]);
  const [sa, ra] = rank(a);
  const [sb, rb] = rank(b);
  return sa! - sb! || ra! - rb! || a.writer - b.writer || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

/**
 * The dump a correct store of this case must produce, computed from the seed §10 generator and the case's
 * `expect` only (never from a writer): every expected record holds generator record r over the full
 * extent, every expected static generator record 0.
 */
export function oracleDump(c: ConformanceCase): ConformanceDump {
  const { schema, expect } = c;
  const full = (v: ConformanceCase["schema"]["vars"][number], r: number): DumpArray => ({
    dtype: v.dtype,
    shape: dimsNoTime(schema, v).map((d) => dimLength(schema, d)),
    data_b64: toBase64(littleEndianBytes(generated(schema, v, r, {}))),
  });
  const records = [...expect.records]
    .sort((a, b) => a.index - b.index)
    .map((rec) => ({
      index: rec.index,
      t: expectedTime(c, rec),
      ...(rec.generation === undefined ? {} : { generation: rec.generation }),
      vars: Object.fromEntries(schema.vars.map((v) => [v.name, full(v, rec.r)])),
    }));
  const statics: Record<string, DumpArray> = {};
  for (const name of [...expect.statics].sort())
    statics[name] = full(schema.statics.find((s) => s.name === name)!, 0);
  return {
    schema: CONFORMANCE_DUMP_SCHEMA,
    case: c.name,
    writer: "oracle",
    reader: "oracle",
    manifest_schema: expect.manifest_schema,
    commit_seq: expect.commit_seq,
    records,
    statics,
    blobs: [...expect.blobs].sort(compareDumpBlobs),
    ...(expect.manifest === undefined ? {} : { manifest: structuredClone(expect.manifest) }),
  };
}
