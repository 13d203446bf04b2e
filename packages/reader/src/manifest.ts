import {
  isOutputManifestV2,
  type OutputManifest,
  type OutputManifestV2,
  ProtocolError,
  SchemaError,
  StoreError,
  validateOutputManifest,
} from "@zarr-stream/spec";
import type { ReadableStore, Store } from "@zarr-stream/store";
import { resolveManifestBytes } from "./manifest-pages.js";
import { cachedDocument, deepFreeze } from "./metadata-cache.js";
import { normalizePythonV1Spelling, usesPythonV1Spelling } from "./python-v1-spelling.js";

export const MANIFEST_KEY = "output_manifest.json";

/** Parses bytes read from a store as JSON, naming the key when they are not JSON. */
export function parseJsonObject(bytes: Uint8Array, key: string): unknown {
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (err) {
    throw new SchemaError(`${key}: not valid UTF-8 JSON (${(err as Error).message})`, "", key);
  }
}

/**
 * Seed §7: the v1 or v2 manifest, validated against its pinned label; a v2 manifest in the paged form
 * (its own label, docs/manifest-pages.md) is returned with its pages resolved and its label kept. A v1
 * manifest in EarthSciIO's Python spelling is read in the contract's spelling (python-v1-spelling.ts).
 * Parsed once per store handle and version (metadata-cache.ts): the result is frozen and shared, so copy
 * what you change.
 */
export async function readOutputManifest(store: ReadableStore): Promise<OutputManifest> {
  const m = await readOutputManifestIfPresent(store);
  if (m === undefined) throw new StoreError(`no ${MANIFEST_KEY} in ${store.url}`, MANIFEST_KEY);
  return m;
}

/** The manifest, or undefined when the store has none yet (a v1 store before its first commit). */
export async function readOutputManifestIfPresent(store: ReadableStore): Promise<OutputManifest | undefined> {
  return cachedDocument(store, MANIFEST_KEY, "manifest", (bytes) => resolveReaderManifest(store, bytes));
}

/** Whether record `index` is committed in a resolved (or inline) manifest. */
export function isRecordCommitted(m: OutputManifest, index: number): boolean {
  if (isV2(m) && m.time_mode === "indexed") return m.records?.entries[index]?.committed === true;
  return index < m.n_records;
}

/**
 * Readers take the manifest in the contract's spelling, its pages resolved (manifest-pages.ts); it is
 * frozen because one parsed manifest is shared by every read of the store handle until a new commit
 * changes its version (metadata-cache.ts).
 */
async function resolveReaderManifest(store: ReadableStore, bytes: Uint8Array): Promise<OutputManifest> {
  const reread = async () => {
    const again = await store.get(MANIFEST_KEY);
    return again === undefined ? undefined : { bytes: again, version: null };
  };
  const { manifest } = await resolveManifestBytes(
    store,
    { bytes, version: null },
    parseReaderManifest,
    reread,
  );
  return manifest;
}

/** The manifest as stored (its head, for a paged one), in the contract's spelling, validated and frozen. */
export function parseReaderManifest(bytes: Uint8Array): OutputManifest {
  return deepFreeze(validateOutputManifest(normalizePythonV1Spelling(parseJsonObject(bytes, MANIFEST_KEY))));
}

/**
 * The manifest and its version tag (null when the store has no compare-and-swap), or undefined when the
 * store has no manifest yet. Owners keep the tag to make their next manifest write conditional on it.
 */
export async function readManifestVersioned(
  store: Store,
): Promise<{ manifest: OutputManifest; tag: string | null } | undefined> {
  const getVersioned = store.getVersioned?.bind(store);
  if (!getVersioned) {
    if ((await store.size(MANIFEST_KEY)) === undefined) return undefined;
    const get = async () => {
      const bytes = await store.get(MANIFEST_KEY);
      return bytes === undefined ? undefined : { bytes, version: null };
    };
    const read = await get();
    if (read === undefined) throw new StoreError(`no ${MANIFEST_KEY} in ${store.url}`, MANIFEST_KEY);
    const { manifest } = await resolveManifestBytes(store, read, manifestForWriter, get);
    return { manifest, tag: null };
  }
  const got = await getVersioned(MANIFEST_KEY);
  if (got === undefined) return undefined;
  const get = () => getVersioned(MANIFEST_KEY);
  const { manifest, version } = await resolveManifestBytes(store, got, manifestForWriter, get);
  return { manifest, tag: version };
}

/**
 * Writers take the manifest as stored: a store in EarthSciIO's Python v1 spelling is read, never resumed,
 * since rewriting its manifest would respell another binding's document (python-v1-spelling.ts).
 */
function manifestForWriter(bytes: Uint8Array): OutputManifest {
  const doc = parseJsonObject(bytes, MANIFEST_KEY);
  if (usesPythonV1Spelling(doc)) {
    throw new SchemaError(
      `${MANIFEST_KEY} is a v1 manifest in EarthSciIO's Python spelling: zarr-stream reads such stores but does not write to them`,
      "",
      MANIFEST_KEY,
    );
  }
  return validateOutputManifest(doc);
}

/** A v2 manifest, in the seed's form or the paged one (docs/manifest-pages.md). */
export function isV2(m: OutputManifest): m is OutputManifestV2 {
  return isOutputManifestV2(m);
}

export function requireV2(m: OutputManifest, what: string): OutputManifestV2 {
  if (!isV2(m))
    throw new ProtocolError(`${what} needs an earthsciio/output-manifest/v2 store, found ${m.schema}`);
  return m;
}
