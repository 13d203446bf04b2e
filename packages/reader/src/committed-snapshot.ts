import type { ZarrArray } from "@zarr-stream/shard";
import { isPagedManifest, type OutputManifest, StoreError } from "@zarr-stream/spec";
import type { ReadableStore } from "@zarr-stream/store";
import { openArray } from "./array-region.js";
import {
  isRecordCommitted,
  isV2,
  MANIFEST_KEY,
  parseReaderManifest,
  readOutputManifest,
} from "./manifest.js";
import { isMissingPage, pagedRecordEntry } from "./manifest-pages.js";
import { cachedDocument } from "./metadata-cache.js";

/**
 * What one record read goes by (consistent-reads.md): the manifest at one version and the answer to
 * "is record `index` committed" at that version, resolved once, then handed down to the array and shard
 * reads. Only the stored head is parsed (vars, dims, n_records, page refs); in a paged indexed manifest
 * the one page holding the record's entry is fetched (with the one index page naming it), so the first
 * read after a commit costs the same at any record count. The head's paged lists stay unresolved: take
 * only head fields from `manifest`. A page gone (collected after a newer manifest landed) falls back to
 * the whole manifest, read again.
 */
export interface RecordSnapshot {
  manifest: OutputManifest;
  committed: boolean;
}

export async function recordSnapshot(store: ReadableStore, index: number): Promise<RecordSnapshot> {
  const head = await cachedDocument(store, MANIFEST_KEY, "manifest-head", parseReaderManifest);
  if (head === undefined) throw new StoreError(`no ${MANIFEST_KEY} in ${store.url}`, MANIFEST_KEY);
  if (!isPagedManifest(head)) return { manifest: head, committed: isRecordCommitted(head, index) };
  const records = isV2(head) && head.time_mode === "indexed" ? head.records : undefined;
  if (records === undefined) return { manifest: head, committed: index < head.n_records };
  try {
    const entry = await pagedRecordEntry(store, records, index);
    return { manifest: head, committed: entry?.committed === true };
  } catch (err) {
    if (!isMissingPage(err)) throw err;
  }
  const whole = await readOutputManifest(store);
  return { manifest: whole, committed: isRecordCommitted(whole, index) };
}

/**
 * The array a snapshot's committed record is read from, opened with a shape that covers `extent`. A
 * commit that grew the array can land between an early zarr.json read and the manifest read, pairing the
 * new manifest with the old shape; the writer grows zarr.json before the manifest names the record, so
 * zarr.json read again after the manifest covers it.
 */
export async function arrayCovering(
  store: ReadableStore,
  variable: string,
  early: Promise<ZarrArray>,
  extent: readonly (readonly [number, number])[],
): Promise<ZarrArray> {
  const array = await early;
  return extent.some(([, stop], d) => stop > array.shape[d]!) ? openArray(store, variable) : array;
}
