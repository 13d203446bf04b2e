import { MANIFEST_KEY, parseJsonObject, readManifestVersioned } from "@zarr-stream/reader";
import {
  isOutputManifestV2,
  isPagedForm,
  ManifestChanged,
  OUTPUT_MANIFEST_V2,
  OUTPUT_MANIFEST_V2_PAGED,
  ProtocolError,
  StoreError,
  schemaFromManifest,
  validateOutputManifest,
} from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { FencedObjects } from "./fenced-objects.js";
import { ManifestCommits } from "./manifest-commits.js";
import { buildManifestV2, serializeManifest, stateFromManifest } from "./manifest-doc.js";

/** What `setManifestPages` did. */
export interface ManifestFormChange {
  /** The label the manifest had, and the one it has now. */
  from: string;
  to: string;
  /** False when the store was in the asked form already (nothing was written). */
  changed: boolean;
  commitSeq: number;
  /** Pages written for the paged form (0 when switching pages off, or when every list fits inline). */
  pagesWritten: number;
  /** Bytes of output_manifest.json as it is now. */
  manifestBytes: number;
}

/**
 * Puts a v2 store's manifest in the paged form (`paged`) or the seed's (docs/manifest-pages.md): the
 * committed state resolved from the manifest, written again under the other label, compare-and-swap on
 * the version read. No committed state changes, so commit_seq stays. Pages the paged form needs are
 * written create-only first; the pages a paged manifest referred to stay in place after switching off,
 * unreferenced, so a reader that holds it still reads it. Refuses with ManifestChanged when the manifest
 * changed after it was read (a commit, or another form change), writing nothing; a live owner whose
 * manifest this rewrites finds it changed at its next commit (CommitError `concurrent-owner`) and
 * resumes in the new form. A paged manifest under the seed's label (written before the paged form had
 * its own) is relabelled first.
 */
export async function setManifestPages(store: Store, paged: boolean): Promise<ManifestFormChange> {
  const relabelled = await relabelEarlyPaged(store);
  const read = await readManifestVersioned(store);
  if (read === undefined) throw new StoreError(`${store.url} has no ${MANIFEST_KEY}`, MANIFEST_KEY);
  const { manifest: m, tag } = read;
  if (!isOutputManifestV2(m))
    throw new ProtocolError(
      `${store.url} holds ${m.schema}, which seed 000 §8.1 pins byte for byte: only a v2 manifest has a paged form`,
    );
  const to = paged ? OUTPUT_MANIFEST_V2_PAGED : OUTPUT_MANIFEST_V2;
  const from = relabelled ? OUTPUT_MANIFEST_V2 : m.schema;
  if (isPagedForm(m) === paged) {
    const bytes = (await store.size(MANIFEST_KEY)) ?? 0;
    return {
      from,
      to,
      changed: relabelled,
      commitSeq: m.commit_seq,
      pagesWritten: 0,
      manifestBytes: bytes,
    };
  }
  // The manifest as a writer of this store writes it, from the committed state: the paged form stores
  // page entries with sorted keys, and the seed's form prints them in the writers' order again.
  const state = stateFromManifest(m);
  const id = {
    schema: schemaFromManifest(m),
    fingerprint: m.fingerprint,
    nWriters: m.n_writers,
    regionDims: m.region_dims,
    baseUrl: m.base_url,
    paged,
  };
  const next = buildManifestV2(id, state);
  const commits = new ManifestCommits(new FencedObjects(store), tag, { url: store.url, writer: 0 });
  // The pages the manifest read refers to are in the store: the paged form writes only the others.
  commits.adoptRead(m, tag);
  const composed = commits.compose(next);
  const landed = await commits.tryWrite({ ...composed, state, manifest: next });
  if (!landed)
    throw new ManifestChanged(
      `${MANIFEST_KEY} of ${store.url} changed after it was read (commit_seq ${m.commit_seq} then): another process wrote it; nothing was written, run the form change again once no writer is committing`,
      MANIFEST_KEY,
    );
  return {
    from,
    to,
    changed: true,
    commitSeq: m.commit_seq,
    pagesWritten: composed.pages?.fresh.length ?? 0,
    manifestBytes: composed.bytes.byteLength,
  };
}

/**
 * Before issue #34 a paged manifest kept the seed's label, which every reader now refuses with page refs
 * in it (a reader of the seed alone would misread it). Such a manifest is given the paged label,
 * compare-and-swap, nothing else changed, so the form change goes on from it. Returns whether it did.
 */
async function relabelEarlyPaged(store: Store): Promise<boolean> {
  const got = await store.getVersioned?.(MANIFEST_KEY);
  if (got === undefined) return false;
  const doc = parseJsonObject(got.bytes, MANIFEST_KEY) as Record<string, unknown> | null;
  const records = doc?.records as Record<string, unknown> | undefined;
  const pageRefs =
    doc?.time_shard_pages !== undefined || records?.pages !== undefined || records?.page_index !== undefined;
  if (doc?.schema !== OUTPUT_MANIFEST_V2 || !pageRefs) return false;
  const bytes = serializeManifest(validateOutputManifest({ ...doc, schema: OUTPUT_MANIFEST_V2_PAGED }));
  if ((await store.putIfVersion?.(MANIFEST_KEY, bytes, got.version)) === undefined)
    throw new ManifestChanged(
      `${MANIFEST_KEY} of ${store.url} changed while its label was being corrected: nothing was written, run the form change again`,
      MANIFEST_KEY,
    );
  return true;
}
