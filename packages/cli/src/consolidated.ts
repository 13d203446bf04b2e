import { parseJsonObject } from "@zarr-stream/reader";
import type { Store } from "@zarr-stream/store";
import type { Problem } from "./problem.js";

const ROOT = "zarr.json";

type Json = unknown;

/**
 * A zarr.json document in the form two writers of one metadata agree on: zarr-python's consolidation
 * writes `storage_transformers: []` where ours leaves the field out, and drops the little-endian
 * configuration of a single-byte dtype's `bytes` codec; neither changes what a reader does.
 */
function normalized(value: Json): Json {
  if (Array.isArray(value)) return value.map(normalized);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, Json> = {};
  for (const [k, v] of Object.entries(value as Record<string, Json>)) {
    if (k === "storage_transformers" && Array.isArray(v) && v.length === 0) continue;
    out[k] = normalized(v);
  }
  const cfg = out.configuration as Record<string, Json> | undefined;
  if (out.name === "bytes" && cfg && Object.keys(cfg).length === 1 && cfg.endian === "little")
    delete out.configuration;
  return out;
}

/** JSON text with object keys sorted, so two documents compare equal whatever their key order. */
function canonical(value: Json): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  const o = value as Record<string, Json>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(",")}}`;
}

const shown = (v: Json) => (v === undefined ? "absent" : canonical(v));

/**
 * Checks the root's Zarr v3 consolidated metadata (`consolidated_metadata`, the form zarr-python 3
 * writes) against each array's own zarr.json: zarr-python and xarray read every array's metadata from the
 * root when it is there, so a stale entry shows them another shape (other records) than the store holds.
 * A root without consolidated metadata passes: readers then open each array's zarr.json.
 */
export async function checkConsolidated(
  store: Store,
  root: Record<string, unknown>,
  arrays: string[],
  problems: Problem[],
): Promise<void> {
  const consolidated = root.consolidated_metadata;
  if (consolidated === undefined || consolidated === null) return;
  const bad = (problem: string) => problems.push({ key: ROOT, problem });
  const metadata = (consolidated as Record<string, unknown>).metadata;
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata))
    return void bad("consolidated_metadata.metadata must be an object of node documents");
  const entries = metadata as Record<string, Json>;
  for (const name of arrays)
    if (!(name in entries)) bad(`consolidated metadata lacks array ${name}: readers using it do not see it`);
  for (const name of Object.keys(entries).sort()) {
    const key = `${name}/zarr.json`;
    const bytes = await store.get(key);
    if (bytes === undefined) {
      bad(`consolidated metadata lists ${name}, which has no ${key}`);
      continue;
    }
    let own: Record<string, Json>;
    try {
      own = normalized(parseJsonObject(bytes, key)) as Record<string, Json>;
    } catch {
      continue; // the array's own check reports an unreadable zarr.json
    }
    const listed = normalized(entries[name]) as Record<string, Json>;
    const fields = [...new Set([...Object.keys(own), ...Object.keys(listed ?? {})])].sort();
    for (const field of fields) {
      const a = listed?.[field];
      const b = own[field];
      if (canonical(a) !== canonical(b))
        bad(
          `consolidated metadata of array ${name} is stale: its ${field} is ${shown(a)}, ${key} has ${shown(b)}`,
        );
    }
  }
}
