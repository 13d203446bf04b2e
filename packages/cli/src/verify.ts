import { crc32c, profileCodec } from "@zarr-stream/codecs";
import { isV2, MANIFEST_KEY, parseJsonObject, readArrayRegion } from "@zarr-stream/reader";
import {
  type ArrayLayout,
  decodeShard,
  itemSize,
  parseArrayZarrJson,
  parseShardIndex,
  shardIndexByteLength,
} from "@zarr-stream/shard";
import {
  CorruptStore,
  manifestPageKey,
  type OutputManifest,
  resolveManifestPages,
  validateManifestPage,
  validateOutputManifest,
} from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { readPublished } from "@zarr-stream/writer";
import { checkConsolidated } from "./consolidated.js";
import { bloscClaim, zstdClaim } from "./frame-header.js";
import { runLimited } from "./limit.js";
import type { Problem } from "./problem.js";
import {
  type ArrayEntry,
  arraysOf,
  committedBlobKeys,
  committedShardKeys,
  dimLength,
} from "./store-model.js";

export type { Problem } from "./problem.js";

export interface VerifyReport {
  store: string;
  ok: boolean;
  deep: boolean;
  checked: { arrays: number; shards: number; chunks: number; blobs: number };
  problems: Problem[];
}

export interface VerifyOptions {
  /**
   * Decode every inner chunk instead of checking frame headers, and compare every committed shard and
   * blob with the checksum the commit that published it recorded (the commit ledgers, fencing.md).
   */
  deep?: boolean;
  /** Called as shard objects are checked. */
  onProgress?: (done: number, total: number) => void;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));
const same = (a: readonly unknown[], b: readonly unknown[]) => JSON.stringify(a) === JSON.stringify(b);

async function readManifest(store: Store, problems: Problem[]): Promise<OutputManifest | undefined> {
  const bytes = await store.get(MANIFEST_KEY);
  if (bytes === undefined) {
    problems.push({ key: MANIFEST_KEY, problem: "missing: the store has no committed state" });
    return undefined;
  }
  try {
    const stored = validateOutputManifest(parseJsonObject(bytes, MANIFEST_KEY));
    // Pages are read and hashed here, never from a reader's cache: verify checks the bytes in the store.
    return await resolveManifestPages(stored, async (list, ref) => {
      const key = manifestPageKey(list, ref.sha256);
      const page = await store.get(key);
      if (page === undefined) throw new CorruptStore(`missing, yet ${MANIFEST_KEY} refers to it`, key);
      return validateManifestPage(list, ref, page);
    });
  } catch (e) {
    if (e instanceof CorruptStore) problems.push({ key: e.key, problem: message(e) });
    else problems.push({ key: MANIFEST_KEY, problem: `fails its schema: ${message(e)}` });
    return undefined;
  }
}

/** Internal consistency of the manifest's record bookkeeping. */
function checkRecordBookkeeping(m: OutputManifest, problems: Problem[]): void {
  const bad = (problem: string) => problems.push({ key: MANIFEST_KEY, problem });
  if (isV2(m) && m.time_mode === "indexed") {
    const n = m.records?.entries.length ?? -1;
    if (n !== m.n_records) bad(`records.entries has ${n} entries, n_records is ${m.n_records}`);
    return;
  }
  const sum = m.time_shards.reduce((s, e) => s + e.n, 0);
  if (sum !== m.n_records) bad(`time_shards hold ${sum} records in total, n_records claims ${m.n_records}`);
  const lastEnd = m.time_shards.at(-1)?.t_end ?? null;
  if (lastEnd !== m.last_t) bad(`last_t is ${m.last_t}, the last time shard ends at ${lastEnd}`);
}

/** The root group's zarr.json, checked; undefined when it is missing or unreadable. */
async function checkGroup(store: Store, problems: Problem[]): Promise<Record<string, unknown> | undefined> {
  const bytes = await store.get("zarr.json");
  if (bytes === undefined)
    return void problems.push({ key: "zarr.json", problem: "the root group's zarr.json is missing" });
  try {
    const doc = parseJsonObject(bytes, "zarr.json") as Record<string, unknown>;
    if (doc?.zarr_format !== 3 || doc.node_type !== "group") {
      problems.push({ key: "zarr.json", problem: 'must be {"zarr_format": 3, "node_type": "group"}' });
    }
    return doc;
  } catch (e) {
    problems.push({ key: "zarr.json", problem: message(e) });
    return undefined;
  }
}

/** Parses an array's zarr.json and compares it with what the manifest says; undefined when unusable. */
async function checkArrayMetadata(store: Store, m: OutputManifest, a: ArrayEntry, problems: Problem[]) {
  const key = `${a.name}/zarr.json`;
  const bytes = await store.get(key);
  if (bytes === undefined) {
    problems.push({ key, problem: `missing: the manifest lists ${a.kind} ${a.name}` });
    return undefined;
  }
  let layout: ArrayLayout;
  try {
    layout = parseArrayZarrJson(parseJsonObject(bytes, key), key);
  } catch (e) {
    problems.push({ key, problem: message(e) });
    return undefined;
  }
  const bad = (problem: string) => problems.push({ key, problem });
  if (layout.dtype !== a.dtype) bad(`data_type is ${layout.dtype}, the manifest says ${a.dtype}`);
  if (!same(layout.dimensionNames, a.dims))
    bad(
      `dimension_names ${JSON.stringify(layout.dimensionNames)}, the manifest says ${JSON.stringify(a.dims)}`,
    );
  if (layout.shape.length !== a.dims.length) return undefined;
  a.dims.forEach((d, i) => {
    const want = dimLength(m, d);
    if (layout.shape[i] !== want) {
      const what = d === m.time_dim ? `${m.n_records} record(s) (n_records)` : `length ${want}`;
      bad(`shape[${i}] (${d}) is ${layout.shape[i]}, but ${MANIFEST_KEY} gives ${d} ${what}`);
    }
    if (layout.shardShape[i] !== m.shard_shape[d])
      bad(`shard shape along ${d} is ${layout.shardShape[i]}, the manifest says ${m.shard_shape[d]}`);
    if (layout.chunkShape[i] !== m.chunk_shape[d])
      bad(`chunk shape along ${d} is ${layout.chunkShape[i]}, the manifest says ${m.chunk_shape[d]}`);
  });
  const codec = profileCodec(m.profile, layout.dtype);
  if (JSON.stringify(codec) !== JSON.stringify(layout.codec)) {
    bad(`inner codec ${JSON.stringify(layout.codec)} is not profile ${m.profile}'s ${JSON.stringify(codec)}`);
  }
  // Shard objects are checked against the shape the manifest commits, not the one zarr.json claims.
  return { ...layout, shape: a.dims.map((d) => dimLength(m, d)) };
}

/** Index CRC and bounds, then each present chunk: header claims (default) or a full decode (deep). */
async function checkShard(
  store: Store,
  key: string,
  layout: ArrayLayout,
  deep: boolean,
  published: Published | undefined,
): Promise<{ problem?: string; chunks: number }> {
  const bytes = await store.get(key);
  if (bytes === undefined) return { problem: "committed shard object is missing", chunks: 0 };
  try {
    if (deep) {
      const changed = await changedSincePublished(key, bytes, published);
      if (changed !== undefined) return { problem: changed, chunks: 0 };
      await decodeShard(layout, bytes, key);
    }
    const indexLen = shardIndexByteLength(layout);
    if (bytes.byteLength < indexLen)
      return {
        problem: `object is ${bytes.byteLength} bytes, shorter than its ${indexLen}-byte index`,
        chunks: 0,
      };
    const at = layout.indexLocation === "start" ? 0 : bytes.byteLength - indexLen;
    const index = await parseShardIndex(layout, bytes.subarray(at, at + indexLen), bytes.byteLength, key);
    const expected = layout.chunkShape.reduce((p, n) => p * n, 1) * itemSize(layout.dtype);
    let chunks = 0;
    for (let i = 0; i < index.offsets.length; i++) {
      const o = index.offsets[i]!;
      if (o < 0) continue;
      chunks++;
      if (deep) continue;
      const body = bytes.subarray(o, o + index.nbytes[i]!);
      const claim = layout.codec.kind === "blosc" ? bloscClaim(body) : zstdClaim(body);
      if (!claim.ok) return { problem: `inner chunk ${i}: ${claim.reason}`, chunks };
      if (claim.size !== undefined && claim.size !== expected) {
        return {
          problem: `inner chunk ${i} decodes to ${claim.size} bytes per its header, expected ${expected}`,
          chunks,
        };
      }
    }
    return { chunks };
  } catch (e) {
    return { problem: message(e).replace(`shard ${JSON.stringify(key)}: `, ""), chunks: 0 };
  }
}

type Published = Awaited<ReturnType<typeof readPublished>>;

/**
 * Whether `bytes` are not what the newest commit that published `key` recorded: rewritten after that
 * commit by something no commit published (a second process of a writer, a flush that was never
 * committed, a stray copy). Objects no ledger lists (stores written before ledgers, writers of other
 * languages) have nothing to compare with.
 */
async function changedSincePublished(
  key: string,
  bytes: Uint8Array,
  published: Published | undefined,
): Promise<string | undefined> {
  const entry = published?.get(key);
  if (entry === undefined) return undefined;
  const crc = await crc32c(bytes);
  if (crc === entry.crc) return undefined;
  const hex = (n: number) => n.toString(16).padStart(8, "0");
  return (
    `its bytes are not those commit ${entry.commitSeq} published (CRC-32C ${hex(crc)}, published ` +
    `${hex(entry.crc)}): rewritten after that commit by a write no commit published`
  );
}

/** Committed times must increase and agree with the manifest's first and last t. */
async function checkTimes(
  store: Store,
  m: OutputManifest,
  layout: ArrayLayout,
  problems: Problem[],
): Promise<void> {
  if ((isV2(m) && m.time_mode === "indexed") || m.n_records === 0) return;
  const key = `${m.time_dim}/zarr.json`;
  const n = m.n_records;
  try {
    const times = (await readArrayRegion(store, m.time_dim, layout, [[0, n]])) as Float64Array;
    for (let i = 1; i < n; i++) {
      if (!(times[i]! > times[i - 1]!)) {
        problems.push({
          key,
          problem: `time values are not strictly increasing at record ${i} (${times[i - 1]} then ${times[i]})`,
        });
        return;
      }
    }
    if (times[n - 1] !== m.last_t)
      problems.push({
        key: MANIFEST_KEY,
        problem: `last_t is ${m.last_t}, the time coordinate's record ${n - 1} is ${times[n - 1]}`,
      });
    const first = m.time_shards[0]?.t_start;
    if (first !== undefined && times[0] !== first)
      problems.push({
        key: MANIFEST_KEY,
        problem: `time_shards[0].t_start is ${first}, record 0 is ${times[0]}`,
      });
  } catch (e) {
    problems.push({ key: m.time_dim, problem: `time coordinate unreadable: ${message(e)}` });
  }
}

/**
 * Seed §1 and §8 checks of a store's committed state: the manifest and every zarr.json against their
 * schemas and each other, every committed shard object present with a good index, every committed blob.
 */
export async function verifyStore(store: Store, opts: VerifyOptions = {}): Promise<VerifyReport> {
  const deep = opts.deep === true;
  const problems: Problem[] = [];
  const checked = { arrays: 0, shards: 0, chunks: 0, blobs: 0 };
  const report = () => ({ store: store.url, ok: problems.length === 0, deep, checked, problems });
  const m = await readManifest(store, problems);
  if (m === undefined) return report();
  checkRecordBookkeeping(m, problems);
  const root = await checkGroup(store, problems);
  const keys = new Set(await store.list(""));
  if (root !== undefined)
    await checkConsolidated(
      store,
      root,
      arraysOf(m, keys).map((a) => a.name),
      problems,
    );
  const work: { key: string; layout: ArrayLayout }[] = [];
  let timeLayout: ArrayLayout | undefined;
  for (const a of arraysOf(m, keys)) {
    const layout = await checkArrayMetadata(store, m, a, problems);
    checked.arrays++;
    if (layout === undefined) continue;
    if (a.kind === "time") timeLayout = layout;
    for (const key of committedShardKeys(m, a, layout)) {
      work.push({ key, layout });
    }
  }
  const published = deep && isV2(m) ? await readPublished(store, m.commit_seq) : undefined;
  let done = 0;
  const shardProblems: Problem[] = [];
  await runLimited(
    work.map((w) => async () => {
      const r = await checkShard(store, w.key, w.layout, deep, published);
      checked.chunks += r.chunks;
      if (r.problem !== undefined) shardProblems.push({ key: w.key, problem: r.problem });
      opts.onProgress?.(++done, work.length);
    }),
  );
  checked.shards = work.length;
  problems.push(...shardProblems.sort((a, b) => (a.key < b.key ? -1 : 1)));
  // times are read only from sound shards: a missing one would read as fill and mislead
  const timePrefix = `${m.time_dim}/`;
  if (timeLayout && !problems.some((p) => p.key.startsWith(timePrefix)))
    await checkTimes(store, m, timeLayout, problems);
  for (const key of committedBlobKeys(m)) {
    checked.blobs++;
    if (!keys.has(key)) problems.push({ key, problem: "committed blob object is missing" });
    else if (deep) {
      const bytes = await store.get(key);
      const changed = bytes && (await changedSincePublished(key, bytes, published));
      if (changed) problems.push({ key, problem: changed });
    }
  }
  return report();
}

export function formatVerify(r: VerifyReport): string {
  const c = r.checked;
  const head = `${r.ok ? "OK" : "FAILED"}: ${r.store} (${c.arrays} arrays, ${c.shards} shards, ${c.chunks} chunks${r.deep ? " decoded" : ""}, ${c.blobs} blobs)`;
  if (r.ok) return head;
  return [
    head,
    `${r.problems.length} problem(s):`,
    ...r.problems.map((p) => `  ${p.key}: ${p.problem}`),
  ].join("\n");
}
