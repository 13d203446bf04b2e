import type { CodecSpec } from "@zarr-stream/codecs";
import {
  isV2,
  MANIFEST_KEY,
  readArrayLayout,
  readArrayRegion,
  readOutputManifest,
} from "@zarr-stream/reader";
import type { ManifestBlob, OutputManifest } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { INTENT_KEY, LEASE_PREFIX, LEDGER_PREFIX, RECEIPT_PREFIX } from "@zarr-stream/writer";
import { type CfCalendar, CfTimeError, parseCfUnits } from "./cf-time.js";
import { describeCodecs, isoTime, plainArrays, storeKind, timeAxisOf } from "./zarr-arrays.js";

/** The writer's own records beside the data: never leftovers of a write. */
const BOOKKEEPING = [LEASE_PREFIX, LEDGER_PREFIX, RECEIPT_PREFIX, INTENT_KEY];

import {
  type ArrayKind,
  arraysOf,
  committedBlobKeys,
  committedPageKeys,
  committedShardKeys,
  metadataKeys,
} from "./store-model.js";

export interface InspectArray {
  name: string;
  kind: ArrayKind;
  dims: string[];
  shape: number[];
  shard_shape: number[];
  chunk_shape: number[];
  dtype: string;
  codec: string;
  /** Shard objects present in the store, committed or not. */
  objects: number;
  bytes: number;
}

/** The time coordinate's CF units and calendar, when its units are "<unit> since <date>". */
export interface InspectTime {
  units: string;
  calendar: CfCalendar;
}

/** `zstream inspect` of a zarr-stream store: its committed state (output_manifest.json). */
export interface InspectReport {
  format: "zarr-stream";
  store: string;
  /** `pages`: the manifest pages the stored manifest refers to (0 when every list is inline). */
  manifest: { label: string; version: 1 | 2; pages: number };
  commit_seq: number | null;
  n_writers: number;
  region_dims: string[];
  time_dim: string;
  time_mode: "append" | "indexed";
  profile: string;
  /** Units and calendar of the time coordinate; null when its units are not CF time units. */
  time: InspectTime | null;
  records: {
    count: number;
    first_t: number | null;
    last_t: number | null;
    /** first_t and last_t decoded (ISO 8601 in the calendar of `time`), null when they cannot be. */
    first_time: string | null;
    last_time: string | null;
    /** Indexed mode: per record index, its generation (0 = never committed) and whether it is committed now. */
    generations?: { index: number; t: number; committed: boolean; generation: number }[];
  };
  statics: { name: string; dims: string[]; dtype: string; committed: boolean }[];
  blobs: ManifestBlob[];
  arrays: InspectArray[];
  bytes_on_disk: number;
  /**
   * Objects in the store that no committed state refers to: leftovers of a crash or of uncommitted writes
   * (the writers' leases, flush receipts, commit ledgers and the owner's commit intent are bookkeeping,
   * not leftovers).
   */
  uncommitted: { key: string; bytes: number }[];
}

export function describeCodec(c: CodecSpec): string {
  return c.kind === "blosc"
    ? `blosc/${c.cname} clevel ${c.clevel} ${["noshuffle", "shuffle", "bitshuffle"][c.shuffle]}`
    : `zstd level ${c.level}${c.checksum ? " checksum" : ""}`;
}

function recordSummary(m: OutputManifest, time: InspectTime | null): InspectReport["records"] {
  const iso = (t: number | null) => (t === null || time === null ? null : (isoTime(t, time) ?? null));
  if (isV2(m) && m.time_mode === "indexed") {
    const entries = (m.records?.entries ?? []).map((e, index) => ({ index, ...e }));
    const committed = entries.filter((e) => e.committed);
    const first = committed[0]?.t ?? null;
    const last = committed.at(-1)?.t ?? null;
    return {
      count: committed.length,
      first_t: first,
      last_t: last,
      first_time: iso(first),
      last_time: iso(last),
      generations: entries,
    };
  }
  const first = m.time_shards[0]?.t_start ?? null;
  return {
    count: m.n_records,
    first_t: first,
    last_t: m.last_t,
    first_time: iso(first),
    last_time: iso(m.last_t),
  };
}

/** CF units and calendar from the time coordinate's attributes; null when they are not CF time. */
function cfTimeOf(attributes: Record<string, unknown>): InspectTime | null {
  const units = attributes.units;
  if (typeof units !== "string") return null;
  try {
    return { units, calendar: parseCfUnits(units, attributes.calendar).calendar };
  } catch (e) {
    if (e instanceof CfTimeError) return null;
    throw e;
  }
}

/** `zstream inspect` of a Zarr v3 store without a manifest: every array as stored. */
export interface ZarrInspectReport {
  format: "zarr";
  store: string;
  /** The CF time coordinate (a 1-D array named by its dim, with "<unit> since <date>" units), if any. */
  time:
    | (InspectTime & { name: string; count: number; first_time: string | null; last_time: string | null })
    | null;
  arrays: {
    name: string;
    dims: string[];
    shape: number[];
    chunk_shape: number[];
    dtype: string;
    codecs: string;
    /** Chunk (or shard) objects present. */
    objects: number;
    bytes: number;
  }[];
  bytes_on_disk: number;
}

async function inspectArrays(store: Store): Promise<ZarrInspectReport> {
  const keys = await store.list("");
  const sizes = new Map(await Promise.all(keys.map(async (k) => [k, (await store.size(k)) ?? 0] as const)));
  const arrays = await plainArrays(store, keys);
  const axis = timeAxisOf(arrays);
  let time: ZarrInspectReport["time"] = null;
  if (axis !== undefined) {
    const a = arrays.find((x) => x.name === axis.name)!;
    const n = a.array.shape[0]!;
    const ends = n === 0 ? [] : await readArrayRegion(store, a.name, a.array, [[0, n]]);
    const at = (i: number) => (n === 0 ? null : (isoTime(ends[i]!, axis) ?? null));
    time = { ...axis, count: n, first_time: at(0), last_time: at(n - 1) };
  }
  return {
    format: "zarr",
    store: store.url,
    time,
    arrays: arrays.map((a) => {
      const prefix = `${a.name}/c`;
      const chunks = keys.filter((k) => k.startsWith(`${prefix}/`) || k.startsWith(`${a.name}/c.`));
      return {
        name: a.name,
        dims: a.dims,
        shape: a.array.shape,
        chunk_shape: a.array.chunkShape,
        dtype: a.array.dtype,
        codecs: describeCodecs(a.array),
        objects: chunks.length,
        bytes: chunks.reduce((n, k) => n + sizes.get(k)!, 0) + (sizes.get(`${a.name}/zarr.json`) ?? 0),
      };
    }),
    bytes_on_disk: [...sizes.values()].reduce((a, b) => a + b, 0),
  };
}

/**
 * Everything `zstream inspect` shows: of a zarr-stream store, read from the manifest, every zarr.json and
 * the object list; of any other Zarr v3 store, its arrays as stored.
 */
export async function inspectStore(store: Store): Promise<InspectReport | ZarrInspectReport> {
  if ((await storeKind(store)) === "zarr") return inspectArrays(store);
  const m = await readOutputManifest(store);
  const keys = await store.list("");
  const keySet = new Set(keys);
  const sizes = new Map(await Promise.all(keys.map(async (k) => [k, (await store.size(k)) ?? 0] as const)));
  const arrays = arraysOf(m, keySet);
  const pages = committedPageKeys(m);
  const committed = new Set([...metadataKeys(arrays), ...committedBlobKeys(m), ...pages]);
  const out: InspectArray[] = [];
  for (const a of arrays) {
    const layout = await readArrayLayout(store, a.name);
    for (const k of committedShardKeys(m, a, layout)) committed.add(k);
    const shards = keys.filter((k) => k.startsWith(`${a.name}/c/`));
    out.push({
      name: a.name,
      kind: a.kind,
      dims: layout.dimensionNames,
      shape: layout.shape,
      shard_shape: layout.shardShape,
      chunk_shape: layout.chunkShape,
      dtype: layout.dtype,
      codec: describeCodec(layout.codec),
      objects: shards.length,
      bytes: shards.reduce((n, k) => n + sizes.get(k)!, 0) + (sizes.get(`${a.name}/zarr.json`) ?? 0),
    });
  }
  const v2 = isV2(m) ? m : undefined;
  const time = cfTimeOf((await readArrayLayout(store, m.time_dim)).attributes);
  return {
    format: "zarr-stream",
    store: store.url,
    manifest: { label: m.schema, version: v2 ? 2 : 1, pages: pages.length },
    commit_seq: v2?.commit_seq ?? null,
    n_writers: v2?.n_writers ?? 1,
    region_dims: v2?.region_dims ?? [],
    time_dim: m.time_dim,
    time_mode: v2?.time_mode ?? "append",
    profile: m.profile,
    time,
    records: recordSummary(m, time),
    statics: (v2?.statics ?? []).map((s) => ({
      name: s.name,
      dims: s.dims,
      dtype: s.dtype,
      committed: v2!.statics_committed.includes(s.name),
    })),
    blobs: v2?.blobs ?? [],
    arrays: out,
    bytes_on_disk: [...sizes.values()].reduce((a, b) => a + b, 0),
    uncommitted: keys
      .filter((k) => !committed.has(k) && k !== MANIFEST_KEY && !BOOKKEEPING.some((p) => k.startsWith(p)))
      .map((key) => ({ key, bytes: sizes.get(key)! })),
  };
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = -1;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) =>
    r
      .map((cell, c) => cell.padEnd(widths[c]!))
      .join("  ")
      .trimEnd(),
  );
}

/** "t 2000-01-01T00:00:00 .. 2000-01-02T23:00:00 (standard)", raw values when they are not CF time. */
function timeRange(
  first: number | null,
  last: number | null,
  firstTime: string | null,
  lastTime: string | null,
  time: InspectTime | null,
): string {
  if (time !== null && firstTime !== null && lastTime !== null)
    return `t ${firstTime} .. ${lastTime} (${time.calendar})`;
  return `t ${first} .. ${last}${time === null ? "" : ` ${time.units}`}`;
}

function formatArrays(r: ZarrInspectReport): string {
  const lines = [
    `store         ${r.store}`,
    `format        Zarr v3, no ${MANIFEST_KEY}: every array as stored (no committed state)`,
  ];
  const t = r.time;
  if (t === null) lines.push("time          no CF time coordinate");
  else
    lines.push(
      `time          ${t.name}: ${t.count} values${t.count ? `, ${t.first_time} .. ${t.last_time} (${t.calendar})` : ""}`,
    );
  lines.push(`bytes on disk ${formatBytes(r.bytes_on_disk)}`, "");
  lines.push(
    ...table([
      ["array", "dims", "shape", "chunk", "dtype", "codecs", "objects", "bytes"],
      ...r.arrays.map((a) => [
        a.name,
        a.dims.join(","),
        a.shape.join("x"),
        a.chunk_shape.join("x"),
        a.dtype,
        a.codecs,
        String(a.objects),
        formatBytes(a.bytes),
      ]),
    ]),
  );
  return lines.join("\n");
}

/** The human form of an inspect report. */
export function formatInspect(r: InspectReport | ZarrInspectReport): string {
  if (r.format === "zarr") return formatArrays(r);
  const lines: string[] = [];
  lines.push(`store         ${r.store}`);
  lines.push(
    `manifest      ${r.manifest.label}${r.commit_seq === null ? "" : `  commit_seq ${r.commit_seq}`}${r.manifest.pages > 0 ? `  ${r.manifest.pages} pages` : ""}`,
  );
  lines.push(
    `writers       ${r.n_writers}${r.region_dims.length ? `  region dims ${r.region_dims.join(", ")}` : ""}`,
  );
  lines.push(`time          ${r.time_dim}, ${r.time_mode}, profile ${r.profile}`);
  const rec = r.records;
  lines.push(
    `records       ${rec.count} committed${rec.count ? `, ${timeRange(rec.first_t, rec.last_t, rec.first_time, rec.last_time, r.time)}` : ""}`,
  );
  if (rec.generations) {
    const gens = rec.generations.map((g) => `${g.index}:${g.committed ? "" : "!"}${g.generation}`);
    lines.push(`generations   ${gens.join(" ")}  (index:generation, ! = not committed now)`);
  }
  lines.push(
    `statics       ${r.statics.length ? r.statics.map((s) => `${s.name}${s.committed ? "" : " (not committed)"}`).join(", ") : "none"}`,
  );
  const blobs = r.blobs.map((b) =>
    b.scope === "static" ? `static/${b.writer}/${b.key}` : `record/${b.record}/${b.writer}/${b.key}`,
  );
  lines.push(
    `blobs         ${blobs.length === 0 ? "none" : blobs.length > 8 ? `${blobs.length} (${blobs.slice(0, 4).join(", ")}, ...)` : blobs.join(", ")}`,
  );
  lines.push(`bytes on disk ${formatBytes(r.bytes_on_disk)}`);
  lines.push("");
  lines.push(
    ...table([
      ["array", "kind", "dims", "shape", "shard", "chunk", "dtype", "codec", "objects", "bytes"],
      ...r.arrays.map((a) => [
        a.name,
        a.kind,
        a.dims.join(","),
        a.shape.join("x"),
        a.shard_shape.join("x"),
        a.chunk_shape.join("x"),
        a.dtype,
        a.codec,
        String(a.objects),
        formatBytes(a.bytes),
      ]),
    ]),
  );
  lines.push("");
  if (r.uncommitted.length === 0) lines.push("uncommitted   none");
  else {
    lines.push(
      `uncommitted   ${r.uncommitted.length} object(s), ${formatBytes(r.uncommitted.reduce((n, u) => n + u.bytes, 0))} (not part of the committed state):`,
    );
    for (const u of r.uncommitted.slice(0, 20)) lines.push(`  ${u.key}  ${formatBytes(u.bytes)}`);
    if (r.uncommitted.length > 20) lines.push(`  ... and ${r.uncommitted.length - 20} more`);
  }
  return lines.join("\n");
}
